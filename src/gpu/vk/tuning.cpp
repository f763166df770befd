// The per-vendor tuning table and its selection (see tuning.hpp).
#include "gpu/vk/tuning.hpp"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <string>

namespace vks::gpu::vk {
namespace {

constexpr uint32_t k_vendor_amd = 0x1002, k_vendor_nvidia = 0x10de, k_vendor_intel = 0x8086, k_vendor_apple = 0x106b;

// One GPU row: workgroup size of the matmuls, lanes per output row (0: the device's subgroup
// size) and the subgroup size to require where the device allows choosing (0: none). The
// matvec is bandwidth-bound: each row's weights are streamed once by its lane group in whole
// blocks, lanes reduce once at the end, so a row wants as many lanes as one subgroup (one
// subgroupAdd, no shared memory) and a workgroup wants a few rows (enough loads in flight per
// compute unit without a grid of tiny workgroups).
struct gpu_row {
  device_class cls;
  uint32_t wg, lanes, want_sg;
};
constexpr gpu_row k_gpu_rows[] = {
    {device_class::nvidia, 128, 32, 0},     // warps of 32: 4 rows per workgroup
    {device_class::amd_rdna, 128, 32, 32},  // wave32 required (RADV and AMDVLK may pick wave64 for compute)
    {device_class::amd_gcn, 256, 64, 0},    // GCN/CDNA: wave64 only, 4 rows per workgroup
    {device_class::intel, 128, 16, 16},     // SIMD16: the width Intel's compilers favour for float work
    {device_class::apple, 128, 32, 0},      // MoltenVK: simdgroups of 32, no size control
    {device_class::other_gpu, 128, 0, 0},   // unknown GPUs: one subgroup per row, as reported
};

const gpu_row& row_of(device_class cls) {
  for (const auto& r : k_gpu_rows)
    if (r.cls == cls) return r;
  return k_gpu_rows[std::size(k_gpu_rows) - 1];
}

bool class_named(std::string_view s, device_class& out) {
  for (auto c : {device_class::nvidia, device_class::amd_rdna, device_class::amd_gcn, device_class::intel,
                 device_class::apple})
    if (s == class_name(c)) {
      out = c;
      return true;
    }
  return false;
}

// "gpu:N" with optional suffixes ":smem" then ":q8" or ":q8i" -> N (1..64), smem, act
// (q8_dot stands for "the device's best": q8_ints without integer dot products); false for
// anything else.
bool parse_lanes(std::string_view s, uint32_t& n, bool& smem, act_quant& act) {
  if (s.substr(0, 4) != "gpu:") return false;
  s.remove_prefix(4);
  auto strip = [&s](std::string_view suffix) {
    const bool has = s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
    if (has) s.remove_suffix(suffix.size());
    return has;
  };
  act = strip(":q8i") ? act_quant::q8_ints : strip(":q8") ? act_quant::q8_dot : act_quant::off;
  smem = strip(":smem");
  if (s.empty() || s.size() > 2) return false;
  n = 0;
  for (char ch : s) {
    if (ch < '0' || ch > '9') return false;
    n = n * 10 + static_cast<uint32_t>(ch - '0');
  }
  return n >= 1 && n <= 64;
}

// The CPU-device row (lavapipe, SwiftShader): threads run workgroups with SIMD across
// invocations. Workgroups of one SIMD vector (8 invocations), each invocation 8 rows (decode)
// or 4 rows x up to 8 tokens (prefill, batches): loads are what lavapipe pays for (see
// matmul.comp).
tuning cpu_row(const device_caps& c, std::string_view force) {
  tuning t;
  t = {.cls = device_class::cpu, .wg_matmul = 8, .lanes = 1, .rows_vec = 8, .rows_mat = 4, .wg_elem = 64, .wg_rows = 64,
       .wg_attn = 8, .serial_attention = true,
       .x_broadcast = c.subgroup_ballot && c.subgroup_size >= 8 && force != "cpu:loads",
       .texel = c.texel_views && (force.empty() || force == "cpu")};
  t.delta_chunk = 0;  // the recurrent DeltaNet kernel: the chunked one is slower on lavapipe (docs/BENCHMARKS.md)
  return t;
}

// act: q8_dot means "q8_1 activations, integer dots where the device has them".
tuning gpu_tuning(const device_caps& c, device_class cls, uint32_t lanes, bool smem, act_quant act) {
  const gpu_row& r = row_of(cls);
  tuning t;
  t.cls = cls;
  t.wg_matmul = r.wg;
  const uint32_t sg = c.subgroup_size ? c.subgroup_size : 32;
  if (lanes == 0) lanes = r.lanes ? r.lanes : sg;
  t.lanes = std::bit_floor(std::clamp<uint32_t>(lanes, 1, 64));  // a power of two
  t.sg_reduce = c.subgroup_arith && !smem;
  if (r.want_sg && c.size_control && r.want_sg >= c.min_subgroup && r.want_sg <= c.max_subgroup) t.sg_size = r.want_sg;
  // gemm.comp: fixed 256-invocation workgroups and 16 KiB of shared memory (Vulkan's minimum).
  t.flash_attention = true;
  t.gemm = (c.max_wg_invocations == 0 || c.max_wg_invocations >= 256) && (c.shared_memory == 0 || c.shared_memory >= 16384);
  t.act = act == act_quant::q8_dot && !c.integer_dot ? act_quant::q8_ints : act;
  return t;
}

}  // namespace

device_class classify(const device_caps& c) {
  if (c.kind == "cpu") return device_class::cpu;
  switch (c.vendor_id) {
    case k_vendor_nvidia: return device_class::nvidia;
    case k_vendor_amd:  // RDNA runs wave32 and wave64; GCN and CDNA only wave64
      return c.subgroup_size == 32 || (c.size_control && c.min_subgroup <= 32 && c.max_subgroup >= 32)
                 ? device_class::amd_rdna
                 : device_class::amd_gcn;
    case k_vendor_intel: return device_class::intel;
    case k_vendor_apple: return device_class::apple;
    default: return device_class::other_gpu;
  }
}

std::string_view class_name(device_class c) {
  switch (c) {
    case device_class::cpu: return "cpu";
    case device_class::nvidia: return "nvidia";
    case device_class::amd_rdna: return "amd-rdna";
    case device_class::amd_gcn: return "amd-gcn";
    case device_class::intel: return "intel";
    case device_class::apple: return "apple";
    case device_class::other_gpu: return "gpu";
  }
  return "gpu";
}

// A trailing ":q8" / ":q8i" on "gpu" or a class name (gpu:N parses its own): q8_1
// activations, removed from s; off without one.
act_quant strip_act(std::string_view& s) {
  for (auto [suffix, a] : {std::pair{std::string_view(":q8i"), act_quant::q8_ints}, {std::string_view(":q8"), act_quant::q8_dot}})
    if (s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix) {
      s.remove_suffix(suffix.size());
      return a;
    }
  return act_quant::off;
}

tuning pick_tuning(const device_caps& c, std::string_view force) {
  tuning t;
  device_class named = device_class::other_gpu;
  uint32_t lanes = 0;
  bool smem = false;
  act_quant act = act_quant::off;
  // q8_1 activations are opt-in on every row (":q8" / ":q8i"): each one adds a quantize
  // dispatch and barrier before four matmuls of a layer (6 -> 10 per layer, past #19's 8),
  // for a gain no GPU has measured yet (docs/architecture.md, "q8_1 activations").
  std::string_view base = force;
  const act_quant asked = strip_act(base);  // "gpu:N..." is parsed whole by parse_lanes
  if (base.substr(0, 3) == "cpu" || (base.empty() && classify(c) == device_class::cpu)) {
    t = cpu_row(c, base);
  } else if (parse_lanes(force, lanes, smem, act)) {
    t = gpu_tuning(c, device_class::other_gpu, lanes, smem, act);
  } else if (class_named(base, named)) {
    t = gpu_tuning(c, named, 0, false, asked);
  } else {  // "" on a GPU, or "gpu": the device's own row (the generic one on a CPU device)
    const device_class own = classify(c);
    t = gpu_tuning(c, own == device_class::cpu ? device_class::other_gpu : own, 0, false, asked);
  }
  const uint32_t cap = std::min<uint32_t>(c.max_wg_invocations ? c.max_wg_invocations : 128, 256);
  t.wg_matmul = std::min(t.wg_matmul, cap);
  t.lanes = std::min(t.lanes, t.wg_matmul);
  t.wg_elem = std::min(t.wg_elem, cap);
  t.wg_rows = std::min(t.wg_rows, cap);
  t.wg_attn = std::min(t.wg_attn, cap);
  if (t.sg_size && t.wg_matmul % t.sg_size != 0) t.sg_size = 0;
  return t;
}

result<void> check_tuning(std::string_view force) {
  uint32_t n = 0;
  bool smem = false;
  act_quant act;
  device_class cls;
  if (force.empty() || force == "cpu" || force == "cpu:ssbo" || force == "cpu:loads" || parse_lanes(force, n, smem, act))
    return ok();
  std::string_view base = force;
  strip_act(base);
  if (base == "gpu" || class_named(base, cls)) return ok();
  return fail(errc::invalid_argument,
              "Vulkan tuning '" + std::string(force) +
                  "': expected cpu, cpu:ssbo, cpu:loads, gpu, gpu:N[:smem] (N lanes per row, 1-64), "
                  "nvidia, amd-rdna, amd-gcn, intel or apple, the GPU ones with an optional :q8 or :q8i");
}

}  // namespace vks::gpu::vk
