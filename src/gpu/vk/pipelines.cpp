// Pipeline layout, lazy pipeline creation with specialization constants, descriptor sets.
#include "gpu/vk/pipelines.hpp"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <unistd.h>

#include "base/log.hpp"
#include "gpu/vk/check.hpp"

namespace vks::gpu::vk {

namespace {
constexpr uint32_t k_pool_sets = 1024;

// The file's bytes when its header (VkPipelineCacheHeaderVersionOne) names this device and
// driver; else empty.
std::vector<char> read_cache_file(const std::string& path, VkPhysicalDevice phys) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  VkPhysicalDeviceProperties p;
  vkGetPhysicalDeviceProperties(phys, &p);
  uint32_t h[4];
  if (data.size() < 32) {
    log::warn("pipeline cache {}: too short, ignored", path);
    return {};
  }
  std::memcpy(h, data.data(), 16);
  if (h[0] < 32 || h[1] != VK_PIPELINE_CACHE_HEADER_VERSION_ONE || h[2] != p.vendorID || h[3] != p.deviceID ||
      std::memcmp(data.data() + 16, p.pipelineCacheUUID, VK_UUID_SIZE) != 0) {
    log::warn("pipeline cache {}: made for another device or driver, ignored", path);
    return {};
  }
  return data;
}
}  // namespace

void pipelines::save_cache() {
  if (cache_file_.empty() || !cache_ || !cache_dirty_) return;
  size_t n = 0;
  if (vkGetPipelineCacheData(ctx_.device(), cache_, &n, nullptr) != VK_SUCCESS || n == 0) return;
  std::vector<char> data(n);
  if (vkGetPipelineCacheData(ctx_.device(), cache_, &n, data.data()) != VK_SUCCESS) return;
  const std::string tmp = cache_file_ + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(data.data(), static_cast<std::streamsize>(n));
    if (!out) {
      log::warn("pipeline cache {}: cannot write, not saved", cache_file_);
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, cache_file_, ec);
  if (ec) {
    log::warn("pipeline cache {}: {}, not saved", cache_file_, ec.message());
    std::filesystem::remove(tmp, ec);
  }
}

pipelines::~pipelines() {
  save_cache();
  VkDevice d = ctx_.device();
  for (auto& e : list_) vkDestroyPipeline(d, e.pipe, nullptr);
  for (auto& [k, v] : views_) vkDestroyBufferView(d, v, nullptr);
  if (pool_) vkDestroyDescriptorPool(d, pool_, nullptr);
  if (cache_) vkDestroyPipelineCache(d, cache_, nullptr);
  if (playout_) vkDestroyPipelineLayout(d, playout_, nullptr);
  if (dsl_) vkDestroyDescriptorSetLayout(d, dsl_, nullptr);
}

result<void> pipelines::init(const std::string& cache_file) {
  cache_file_ = cache_file;
  VkDevice d = ctx_.device();
  std::array<VkDescriptorSetLayoutBinding, k_bindings> b{};
  for (uint32_t i = 0; i < k_bindings; ++i)
    b[i] = {i, i < k_storage_bindings ? VK_DESCRIPTOR_TYPE_STORAGE_BUFFER : VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, 1,
            VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo dci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dci.bindingCount = k_bindings;
  dci.pBindings = b.data();
  VKS_VK_TRY(vkCreateDescriptorSetLayout(d, &dci, nullptr, &dsl_), "vkCreateDescriptorSetLayout");
  VkPushConstantRange pcr{VK_SHADER_STAGE_COMPUTE_BIT, 0, k_push_bytes};
  VkPipelineLayoutCreateInfo pci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pci.setLayoutCount = 1;
  pci.pSetLayouts = &dsl_;
  pci.pushConstantRangeCount = 1;
  pci.pPushConstantRanges = &pcr;
  VKS_VK_TRY(vkCreatePipelineLayout(d, &pci, nullptr, &playout_), "vkCreatePipelineLayout");
  VkPipelineCacheCreateInfo cci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  const auto initial = cache_file_.empty() ? std::vector<char>() : read_cache_file(cache_file_, ctx_.physical());
  cci.initialDataSize = initial.size();
  cci.pInitialData = initial.empty() ? nullptr : initial.data();
  if (vkCreatePipelineCache(d, &cci, nullptr, &cache_) != VK_SUCCESS) {
    if (!initial.empty()) log::warn("pipeline cache {}: refused by the driver, starting empty", cache_file_);
    cci.initialDataSize = 0;
    cci.pInitialData = nullptr;
    VKS_VK_TRY(vkCreatePipelineCache(d, &cci, nullptr, &cache_), "vkCreatePipelineCache");
  }
  const VkDescriptorPoolSize ps[2] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, k_pool_sets * k_storage_bindings},
                                      {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, k_pool_sets * (k_bindings - k_storage_bindings)}};
  VkDescriptorPoolCreateInfo poi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  poi.maxSets = k_pool_sets;
  poi.poolSizeCount = 2;
  poi.pPoolSizes = ps;
  VKS_VK_TRY(vkCreateDescriptorPool(d, &poi, nullptr, &pool_), "vkCreateDescriptorPool");
  return ok();
}

result<uint32_t> pipelines::get(kernel k, spec s) {
  auto& known = by_kernel_[static_cast<uint32_t>(k)];
  for (uint32_t i : known)
    if (list_[i].sp == s) return i;
  const auto& m = spirv_of(k);
  const auto words = m.words;
  VkDevice d = ctx_.device();
  VkShaderModuleCreateInfo smi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  smi.codeSize = words.size() * 4;
  smi.pCode = words.data();
  VkShaderModule mod;
  VKS_VK_TRY(vkCreateShaderModule(d, &smi, nullptr, &mod), "vkCreateShaderModule");
  const std::array<VkSpecializationMapEntry, 5> me{{{0, 0, 4}, {1, 4, 4}, {2, 8, 4}, {3, 12, 4}, {4, 16, 4}}};
  const std::array<uint32_t, 5> data{s.wg, s.lanes, s.rows, s.xb, s.tb};
  VkSpecializationInfo si{s.tb ? 5u : 4u, me.data(), sizeof data, data.data()};
  VkComputePipelineCreateInfo cpi{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cpi.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, nullptr, 0, VK_SHADER_STAGE_COMPUTE_BIT, mod, "main", &si};
  VkPipelineShaderStageRequiredSubgroupSizeCreateInfoEXT rsg{
      VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO_EXT};
  if (s.sg_size) {
    const auto& c = ctx_.caps();
    VKS_ASSERT(c.size_control && s.sg_size >= c.min_subgroup && s.sg_size <= c.max_subgroup && s.wg % s.sg_size == 0,
               "required subgroup size outside what the device allows");
    rsg.requiredSubgroupSize = s.sg_size;
    cpi.stage.pNext = &rsg;
    cpi.stage.flags = VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT_EXT;
  }
  cpi.layout = playout_;
  VkPipeline pipe;
  VkResult r = vkCreateComputePipelines(d, cache_, 1, &cpi, nullptr, &pipe);
  vkDestroyShaderModule(d, mod, nullptr);
  if (r != VK_SUCCESS) return vk_fail(r, "creating pipeline " + std::string(m.name));
  list_.push_back({k, s, pipe});
  cache_dirty_ = true;
  known.push_back(static_cast<uint32_t>(list_.size() - 1));
  return known.back();
}

VkDescriptorSet pipelines::set_for(const binding_set& b) {
  if (auto it = sets_.find(b); it != sets_.end()) return it->second;
  if (sets_.size() >= k_pool_sets) return VK_NULL_HANDLE;
  std::array<VkBufferView, k_bindings> tv{};
  if (ctx_.caps().texel_views)
    for (uint32_t i = k_storage_bindings; i < k_bindings; ++i)
      if (!(tv[i] = view_for(b[i], k_texel_formats[i - k_storage_bindings]))) return VK_NULL_HANDLE;
  VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = pool_;
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &dsl_;
  VkDescriptorSet set;
  if (vkAllocateDescriptorSets(ctx_.device(), &ai, &set) != VK_SUCCESS) return VK_NULL_HANDLE;
  std::array<VkDescriptorBufferInfo, k_bindings> bi{};
  std::array<VkWriteDescriptorSet, k_bindings> w{};
  uint32_t n = 0;
  for (uint32_t i = 0; i < k_bindings; ++i) {
    if (i < k_storage_bindings) {
      bi[i] = {b[i].buf, b[i].offset, b[i].range};
      w[n++] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, nullptr, set, i, 0, 1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, nullptr, &bi[i], nullptr};
    } else if (tv[i]) {
      w[n++] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, nullptr, set, i, 0, 1, VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, nullptr, nullptr, &tv[i]};
    }
  }
  vkUpdateDescriptorSets(ctx_.device(), n, w.data(), 0, nullptr);
  sets_.emplace(b, set);
  return set;
}

VkBufferView pipelines::view_for(const binding& b, VkFormat f) {
  if (auto it = views_.find({b, f}); it != views_.end()) return it->second;
  VkBufferViewCreateInfo vi{VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
  vi.buffer = b.buf;
  vi.format = f;
  vi.offset = b.offset;
  vi.range = b.range;
  VkBufferView v = VK_NULL_HANDLE;
  if (vkCreateBufferView(ctx_.device(), &vi, nullptr, &v) != VK_SUCCESS) {
    log::error("vulkan: vkCreateBufferView failed (offset {}, range {})", b.offset, b.range);
    return VK_NULL_HANDLE;
  }
  views_.emplace(std::pair{b, f}, v);
  return v;
}

void pipelines::reset_sets() {
  vkResetDescriptorPool(ctx_.device(), pool_, 0);
  sets_.clear();
}

}  // namespace vks::gpu::vk
