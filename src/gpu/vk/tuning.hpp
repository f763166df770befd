// The per-device kernel tuning (#20): one row per device class (NVIDIA, AMD RDNA wave32,
// AMD GCN/CDNA wave64, Intel, Apple via MoltenVK, other GPUs, CPU devices), chosen once at
// init from the vendor id and device properties (device_caps), overridable by
// vk_options::tuning (`--vk-tuning`, the tests' VKS_VK_TUNING). Pure: unit-tested without a
// device. Every kernel is correct under every row; the rows only change speed.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/result.hpp"
#include "gpu/vk/context.hpp"

namespace vks::gpu::vk {

enum class device_class { cpu, nvidia, amd_rdna, amd_gcn, intel, apple, other_gpu };

// Decode matvec activations (#20): f32 (matmul.comp), or quantized to q8_1 for the integer-dot
// weight types (matvec_q8_1.comp) with unpacked int multiply-adds or the device's integer dot
// product (VK_KHR_shader_integer_dot_product).
enum class act_quant { off, q8_ints, q8_dot };

// The class of a device from its vendor id and properties (no override).
device_class classify(const device_caps& c);
// "cpu", "nvidia", "amd-rdna", "amd-gcn", "intel", "apple", "gpu" (the --vk-tuning names).
std::string_view class_name(device_class c);

struct tuning {
  device_class cls = device_class::other_gpu;
  uint32_t wg_matmul = 64, lanes = 1;  // lanes per output row (1: no reduction)
  uint32_t rows_vec = 1, rows_mat = 1; // rows per invocation (lanes == 1 only): matvec, matmul
  uint32_t wg_elem = 256, wg_rows = 256, wg_attn = 64;
  bool serial_attention = false;       // barrier-free attention (one invocation per head)
  bool flash_attention = false;        // attention_flash.comp (+ merge): GPU tunings
  uint32_t attn_wg_target = 256;       // flash decoding splits the context until this many workgroups
  bool x_broadcast = false;            // q8_0 matmul (lanes == 1): x shared by subgroupBroadcast
  bool texel = false;                  // texel-view kernels where they apply (CPU devices): matmul,
                                       // attention, rms_norm, add, silu_mul; planar q8_0
  // Texel kernels: rows per invocation (matvec, matmul) and tokens per invocation (matmul).
  // Swept on lavapipe with bench_decode (SmolLM2-135M q8_0): 8/8/8 beat 2-4 rows or tokens by
  // 1.1-1.5x (prefill) and 16 by nothing measurable.
  uint32_t rows_tvec = 8, rows_tmat = 8, tb_tmat = 8;  // rows: a multiple of 4 dividing k_planar_row_pad
  // GPU matmuls (lanes > 1): lane sums reduced by subgroupAdd (the *_sg kernels) where the
  // device has subgroup arithmetic, else through shared memory (*_red).
  bool sg_reduce = false;
  // Subgroup size the matmul pipelines require (0: the driver's choice): set only where the
  // device's subgroup size control allows it (RDNA's wave32, Intel's SIMD16).
  uint32_t sg_size = 0;
  bool gemm = false;  // more than 8 tokens: gemm.comp's 64 x 64 shared-memory tiles (GPU rows)
  // T <= 8 matmuls of q4_0/q4_1/q5_0/q5_1/q8_0/q4_K/q5_K/q6_K weights (lanes > 1): q8_1
  // activations and integer dots. The device's own GPU row (and a named class's) where the
  // device has integer dot products; "gpu:N" rows only with the :q8 / :q8i suffix; never CPU.
  act_quant act = act_quant::off;
  // Gated DeltaNet (#23): when a sequence has more than one token in the step, the chunked (WY)
  // kernel delta_net_chunk.comp with chunks of at most this many tokens (a power of two <= 32,
  // lowered until its shared arrays fit); 0: the token-by-token delta_net.comp always.
  // GPU rows; the CPU row keeps the recurrent kernel (lavapipe runs the chunked one slower).
  uint32_t delta_chunk = 32;
};

// force: "" (by device class), "cpu" (texel matmuls where they apply), "cpu:ssbo" (CPU kernels
// on storage buffers only), "cpu:loads" (those without x_broadcast, as on a device with
// subgroups under 8), "gpu" (this device's GPU row; the generic one on a CPU device), "gpu:N"
// (the generic GPU row with N lanes per matmul row, as if the subgroup size were N: lets one
// device test the tilings of others), "gpu:N:smem" (the same with shared-memory reductions,
// as on a device without subgroup arithmetic), "gpu:N[:smem]:q8" (and q8_1 activations with
// the device's integer dot product, unpacked ints without it), "gpu:N[:smem]:q8i" (q8_1
// activations with unpacked ints), or a class name ("nvidia", "amd-rdna",
// "amd-gcn", "intel", "apple": that class's row, with this device's features).
tuning pick_tuning(const device_caps& c, std::string_view force);

// invalid_argument naming the accepted values unless `force` is one pick_tuning takes.
result<void> check_tuning(std::string_view force);

}  // namespace vks::gpu::vk
