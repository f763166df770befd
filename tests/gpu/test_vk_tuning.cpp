// The per-vendor tuning table (gpu/vk/tuning.hpp) without a device: device classes from
// vendor ids and subgroup properties, each class's row, the --vk-tuning overrides, and the
// fallbacks where a feature is absent (no subgroup arithmetic, no subgroup size control).
#include "catch.hpp"

#include "gpu/vk/tuning.hpp"

using namespace vks::gpu::vk;

namespace {
device_caps gpu(uint32_t vendor, uint32_t sg, bool arith = true, uint32_t min_sg = 0, uint32_t max_sg = 0) {
  device_caps c;
  c.kind = "discrete";
  c.vendor_id = vendor;
  c.subgroup_size = sg;
  c.subgroup_arith = arith;
  c.subgroup_ballot = true;
  c.size_control = min_sg > 0;
  c.min_subgroup = min_sg;
  c.max_subgroup = max_sg;
  c.max_wg_invocations = 1024;
  return c;
}
device_caps lavapipe() {
  device_caps c = gpu(0x10005, 8, true, 8, 8);
  c.kind = "cpu";
  c.texel_views = true;
  return c;
}
}  // namespace

TEST_CASE("device classes from vendor id and subgroup properties", "[tuning]") {
  CHECK(classify(gpu(0x10de, 32)) == device_class::nvidia);
  CHECK(classify(gpu(0x1002, 64, true, 32, 64)) == device_class::amd_rdna);  // RDNA: wave32 and wave64
  CHECK(classify(gpu(0x1002, 32)) == device_class::amd_rdna);
  CHECK(classify(gpu(0x1002, 64)) == device_class::amd_gcn);                // GCN/CDNA: wave64 only
  CHECK(classify(gpu(0x1002, 64, true, 64, 64)) == device_class::amd_gcn);
  CHECK(classify(gpu(0x8086, 32, true, 8, 32)) == device_class::intel);
  CHECK(classify(gpu(0x106b, 32)) == device_class::apple);
  CHECK(classify(gpu(0x13b5, 16)) == device_class::other_gpu);  // ARM Mali
  CHECK(classify(lavapipe()) == device_class::cpu);
}

TEST_CASE("each class's row: lanes per row, required subgroup size, subgroup reductions", "[tuning]") {
  const tuning nv = pick_tuning(gpu(0x10de, 32), "");
  CHECK((nv.cls == device_class::nvidia && nv.lanes == 32 && nv.wg_matmul == 128 && nv.sg_reduce && nv.sg_size == 0));
  const tuning rdna = pick_tuning(gpu(0x1002, 64, true, 32, 64), "");
  CHECK((rdna.cls == device_class::amd_rdna && rdna.lanes == 32 && rdna.sg_size == 32));
  const tuning rdna_nc = pick_tuning(gpu(0x1002, 32), "");  // no size control: nothing required
  CHECK((rdna_nc.lanes == 32 && rdna_nc.sg_size == 0));
  const tuning gcn = pick_tuning(gpu(0x1002, 64), "");
  CHECK((gcn.cls == device_class::amd_gcn && gcn.lanes == 64 && gcn.wg_matmul == 256 && gcn.sg_size == 0));
  const tuning intel = pick_tuning(gpu(0x8086, 32, true, 8, 32), "");
  CHECK((intel.lanes == 16 && intel.sg_size == 16));
  const tuning apple = pick_tuning(gpu(0x106b, 32), "");
  CHECK((apple.cls == device_class::apple && apple.lanes == 32 && apple.sg_size == 0));
  const tuning other = pick_tuning(gpu(0x13b5, 16), "");
  CHECK((other.lanes == 16 && other.wg_matmul == 128));
  const tuning cpu = pick_tuning(lavapipe(), "");
  CHECK((cpu.cls == device_class::cpu && cpu.lanes == 1 && cpu.texel && cpu.x_broadcast && cpu.rows_vec == 8));
  // Every GPU row keeps rows per workgroup whole and the required size dividing the workgroup.
  for (auto* t : {&nv, &rdna, &rdna_nc, &gcn, &intel, &apple, &other}) {
    CHECK(t->wg_matmul % t->lanes == 0);
    CHECK((t->sg_size == 0 || t->wg_matmul % t->sg_size == 0));
  }
}

TEST_CASE("fallbacks: no subgroup arithmetic, small workgroup limits", "[tuning]") {
  const tuning t = pick_tuning(gpu(0x10de, 32, false), "");
  CHECK((t.lanes == 32 && !t.sg_reduce));  // shared-memory reductions (*_red)
  device_caps small = gpu(0x1002, 64);
  small.max_wg_invocations = 128;
  const tuning s = pick_tuning(small, "");
  CHECK((s.wg_matmul == 128 && s.lanes == 64));
  device_caps none = gpu(0x10de, 0);  // no subgroup properties reported
  CHECK(pick_tuning(none, "gpu").lanes == 32);
}

TEST_CASE("--vk-tuning overrides: cpu|gpu|gpu:N|gpu:N:smem and class names", "[tuning]") {
  const device_caps lp = lavapipe();
  CHECK(pick_tuning(lp, "gpu").lanes == 8);  // the generic GPU row with this device's subgroup
  CHECK(pick_tuning(lp, "gpu").sg_reduce);
  CHECK(pick_tuning(lp, "gpu:16").lanes == 16);
  CHECK(pick_tuning(lp, "gpu:4").lanes == 4);
  CHECK_FALSE(pick_tuning(lp, "gpu:32:smem").sg_reduce);
  CHECK(pick_tuning(lp, "gpu:32:smem").lanes == 32);
  CHECK(pick_tuning(lp, "cpu:ssbo").texel == false);
  CHECK(pick_tuning(lp, "cpu:loads").x_broadcast == false);
  const tuning gcn = pick_tuning(lp, "amd-gcn");  // that row on lavapipe: 64 lanes, no required size
  CHECK((gcn.cls == device_class::amd_gcn && gcn.lanes == 64 && gcn.sg_size == 0));
  CHECK(pick_tuning(gpu(0x10de, 32), "cpu").lanes == 1);
  for (const char* ok : {"", "cpu", "cpu:ssbo", "cpu:loads", "gpu", "gpu:1", "gpu:64", "gpu:8:smem", "nvidia", "amd-rdna",
                         "amd-gcn", "intel", "apple"})
    CHECK(check_tuning(ok).ok());
  for (const char* bad : {"gpu:0", "gpu:65", "gpu:", "gpu:x", "gpu:8:", "gpu:8:shared", "amd", "GPU", "cpu:"})
    CHECK_FALSE(check_tuning(bad).ok());
}

TEST_CASE("q8_1 activations: only when asked (:q8, :q8i), integer dots where the device has them, never CPU", "[tuning]") {
  device_caps nv = gpu(0x10de, 32);
  CHECK(pick_tuning(nv, "gpu:q8").act == act_quant::q8_ints);  // no integer dot product: unpacked ints
  nv.integer_dot = true;
  CHECK(pick_tuning(nv, "").act == act_quant::off);  // opt-in on every row (dispatch count, #19)
  CHECK(pick_tuning(nv, "gpu").act == act_quant::off);
  CHECK(pick_tuning(nv, "nvidia").act == act_quant::off);
  CHECK(pick_tuning(nv, "gpu:q8").act == act_quant::q8_dot);
  CHECK(pick_tuning(nv, "gpu:q8i").act == act_quant::q8_ints);
  const tuning rdna = pick_tuning(nv, "amd-rdna:q8");
  CHECK((rdna.act == act_quant::q8_dot && rdna.cls == device_class::amd_rdna));
  CHECK(pick_tuning(nv, "gpu:32").act == act_quant::off);
  CHECK(pick_tuning(nv, "gpu:32:q8").act == act_quant::q8_dot);
  CHECK(pick_tuning(nv, "gpu:32:q8i").act == act_quant::q8_ints);
  const tuning smem = pick_tuning(nv, "gpu:4:smem:q8");
  CHECK((smem.act == act_quant::q8_dot && smem.lanes == 4 && !smem.sg_reduce));
  CHECK(pick_tuning(gpu(0x10de, 32), "gpu:32:q8").act == act_quant::q8_ints);  // the fallback
  for (const char* good : {"gpu:q8", "gpu:q8i", "nvidia:q8", "intel:q8i"}) CHECK(check_tuning(good).ok());
  for (const char* bad : {"cpu:q8", "gpu:q8:q8", "nvidia:q9", ":q8"}) CHECK_FALSE(check_tuning(bad).ok());
  device_caps cpu = lavapipe();
  cpu.integer_dot = true;
  CHECK(pick_tuning(cpu, "").act == act_quant::off);
  CHECK(pick_tuning(cpu, "gpu").act == act_quant::off);
  CHECK(pick_tuning(cpu, "gpu:8:q8").act == act_quant::q8_dot);
  CHECK(check_tuning("gpu:32:q8").ok());
  CHECK(check_tuning("gpu:4:smem:q8i").ok());
  CHECK(!check_tuning("gpu:32:q9").ok());
}
