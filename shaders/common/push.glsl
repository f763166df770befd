// Push-constant layouts shared by kernels. Each struct is mirrored in C++
// (src/gpu/vk/push.hpp) with a static_assert on its size; change both together.
struct push_elementwise {
  uint n;  // number of elements
};
