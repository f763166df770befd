// KV pool sizing: explicit sizes, utilization, caps and the error when nothing fits.
#include "catch.hpp"

#include "engine/kv_budget.hpp"

using namespace vks;

namespace {
model::model_config small_model() {
  model::model_config c;
  c.n_layer = 2;
  c.n_head_kv = 2;
  c.head_dim = 64;
  return c;
}
}  // namespace

TEST_CASE("kv block bytes count K and V of every layer", "[kv_budget]") {
  // 2 (K,V) * 2 layers * 128 floats * 4 bytes * 16 tokens
  CHECK(engine::kv_block_bytes(small_model(), gpu::dtype::f32, 16) == 2u * 2 * 128 * 4 * 16);
  CHECK(engine::kv_block_bytes(small_model(), gpu::dtype::f16, 16) == 2u * 2 * 128 * 2 * 16);
  // q8_0: a row of 128 values is 4 blocks of 34 bytes (32 int8 + an f16 scale).
  CHECK(engine::kv_block_bytes(small_model(), gpu::dtype::q8_0, 16) == 2u * 2 * (4 * 34) * 16);
}

TEST_CASE("kv block bytes: per-layer row widths, KV-shared layers cost nothing", "[kv_budget][gemma4]") {
  // A Gemma 4-like shape: 4 layers, sliding 0 and 2 (heads of 32, 2 KV heads), global 1 and 3
  // (heads of 64, 1 KV head); layers 2 and 3 read 0's and 1's cache (shared_kv_layers 2).
  model::model_config c;
  c.arch = "gemma4";
  c.n_layer = 4;
  c.n_head = 4;
  c.n_head_kv = 1;
  c.head_dim = 64;
  c.head_dim_swa = 32;
  c.n_head_kv_layer = {2, 1, 2, 1};
  c.sliding_window = 8;
  c.swa_layers = {1, 0, 1, 0};
  c.n_kv_shared = 2;
  // 2 (K,V) * (layer 0: 2 x 32 + layer 1: 1 x 64) floats * 4 bytes * 16 tokens
  CHECK(engine::kv_block_bytes(c, gpu::dtype::f32, 16) == 2u * (64 + 64) * 4 * 16);
  c.n_kv_shared = 0;  // every layer its own: twice that
  CHECK(engine::kv_block_bytes(c, gpu::dtype::f32, 16) == 2u * 2 * (64 + 64) * 4 * 16);
  c.n_head_kv_layer = {2, 4, 2, 4};  // global layers with 4 KV heads of 64
  CHECK(engine::kv_block_bytes(c, gpu::dtype::f16, 16) == 2u * 2 * (64 + 256) * 2 * 16);
}

TEST_CASE("plan_kv_blocks sizes from an explicit byte budget", "[kv_budget]") {
  engine::kv_budget_input in;
  in.max_context = 256;  // 16 blocks per sequence
  in.kv_cache_bytes = 100 * engine::kv_block_bytes(small_model(), gpu::dtype::f32, 16);
  auto n = engine::plan_kv_blocks(small_model(), in);
  REQUIRE(n.ok());
  CHECK(*n == 100);
  in.max_num_seqs = 2;  // cap: 2 full sequences + 1
  CHECK(*engine::plan_kv_blocks(small_model(), in) == 33);
}

TEST_CASE("plan_kv_blocks subtracts weights and reserve from device memory", "[kv_budget]") {
  engine::kv_budget_input in;
  in.max_context = 256;
  const auto blk = engine::kv_block_bytes(small_model(), gpu::dtype::f32, 16);
  in.device_memory_bytes = 1000 * blk;
  in.gpu_memory_utilization = 0.5;
  in.weights_bytes = 100 * blk;
  in.scratch_reserve_bytes = 0;
  CHECK(*engine::plan_kv_blocks(small_model(), in) == 400);
}

TEST_CASE("plan_kv_blocks refuses a budget below one sequence", "[kv_budget]") {
  engine::kv_budget_input in;
  in.max_context = 256;
  in.kv_cache_bytes = 3 * engine::kv_block_bytes(small_model(), gpu::dtype::f32, 16);
  auto n = engine::plan_kv_blocks(small_model(), in);
  REQUIRE_FALSE(n.ok());
  CHECK(n.error().code == errc::out_of_memory);
  in.kv_cache_bytes = 0;
  in.gpu_memory_utilization = 1.5;
  CHECK(engine::plan_kv_blocks(small_model(), in).error().code == errc::invalid_argument);
}

TEST_CASE("a hybrid's KV blocks count its attention layers only, its state pool comes off the budget", "[kv_budget]") {
  model::model_config c = small_model();
  c.n_layer = 8;
  c.full_attn_interval = 4;  // layers 3 and 7 attend, the other six are recurrent
  CHECK(engine::kv_block_bytes(c, gpu::dtype::f32, 16) == 2u * 2 * 128 * 4 * 16);
  engine::kv_budget_input in;
  in.max_context = 256;
  const auto blk = engine::kv_block_bytes(c, gpu::dtype::f32, 16);
  in.device_memory_bytes = 1000 * blk;
  in.gpu_memory_utilization = 0.5;
  in.scratch_reserve_bytes = 0;
  in.state_bytes = 100 * blk;
  CHECK(*engine::plan_kv_blocks(c, in) == 400);
}
