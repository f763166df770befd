// tensor view helpers declared in gpu/backend.hpp: reshaping and row slicing are free
// (same buffer, new offset/shape).
#include "base/assert.hpp"
#include "gpu/backend.hpp"

namespace vks::gpu {

tensor tensor::view(std::array<int64_t, 4> shape) const {
  tensor t = *this;
  t.ne = shape;
  VKS_ASSERT(t.n_elements() == n_elements(), "tensor::view changes the element count");
  VKS_ASSERT(shape[0] % traits(type).block_elems == 0, "tensor::view splits a quant block");
  return t;
}

tensor tensor::rows(int64_t first, int64_t count) const {
  VKS_ASSERT(first >= 0 && count >= 0 && first + count <= n_rows(), "tensor::rows out of range");
  tensor t = *this;
  t.offset = offset + static_cast<uint64_t>(first) * row_bytes(type, static_cast<uint64_t>(ne[0]));
  t.ne = {ne[0], count, 1, 1};
  return t;
}

}  // namespace vks::gpu
