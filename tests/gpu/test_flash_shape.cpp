// attention_flash.comp's workgroup shape (gpu/vk/flash_shape.hpp) without a device: head dims
// 64 to 512 (Gemma 4's global layers: 512) fit the 32 KiB of shared memory every current GPU
// has (Apple's limit; NVIDIA 48 KiB, AMD / Intel 64 KiB per workgroup), and a device with
// Vulkan's minimum of 16 KiB still gets a shape (smaller tiles, then fewer rows).
#include "catch.hpp"

#include "gpu/vk/flash_shape.hpp"

using namespace vks::gpu::vk;

TEST_CASE("flash attention shapes: rows, key tiles and shared memory per head dim", "[flash_shape]") {
  // D = 512: 2 query rows, 8-key tiles, 25,776 bytes; D = 256: 4 rows, 16 keys, 26,080 bytes.
  const flash_shape s512 = pick_flash_shape(512, 8, 1, 32768);
  CHECK((s512.rows == 2 && s512.keys == 8 && s512.gc == 2 && s512.nq == 1));
  CHECK(s512.shared_bytes == 25776);
  const flash_shape s256 = pick_flash_shape(256, 2, 64, 32768);
  CHECK((s256.rows == 4 && s256.keys == 16 && s256.gc == 2 && s256.nq == 2));
  CHECK(s256.shared_bytes == 26080);
  CHECK(pick_flash_shape(512, 1, 64, 32768).nq == 2);   // prefill: 2 tokens of one head
  CHECK(pick_flash_shape(64, 8, 1, 32768).gc == 8);     // decode: the whole GQA group
  CHECK(pick_flash_shape(64, 3, 100, 32768).nq == 5);   // 16 rows: 3 heads x 5 tokens
  for (uint32_t d = 32; d <= 512; d += 32)
    for (uint32_t g : {1u, 2u, 4u, 6u, 8u}) {
      INFO("D " << d << " G " << g);
      const flash_shape s = pick_flash_shape(d, g, 9, 32768);
      REQUIRE(s.rows > 0);
      CHECK(s.shared_bytes <= 32768);
      CHECK(s.rows * d <= 1024);
      CHECK((g % s.gc == 0 && s.gc * s.nq <= s.rows));
    }
}

TEST_CASE("flash attention shapes: short shared memory shrinks tiles, then rows", "[flash_shape]") {
  const flash_shape s = pick_flash_shape(512, 4, 1, 16384);  // Vulkan's minimum
  CHECK((s.rows == 1 && s.keys == 4 && s.gc == 1));
  CHECK(s.shared_bytes <= 16384);
  CHECK(pick_flash_shape(256, 4, 1, 16384).rows > 0);
  CHECK(pick_flash_shape(512, 4, 1, 8192).rows == 0);  // nothing fits: attention.comp instead
  CHECK(pick_flash_shape(512, 4, 1, 0).rows == 0);     // unknown limit: not used
  CHECK(pick_flash_shape(2048, 1, 1, 1 << 20).rows == 0);
}
