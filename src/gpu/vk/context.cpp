// Instance creation, device ranking/selection, capability query and logical device.
#include "gpu/vk/context.hpp"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "gpu/vk/check.hpp"

namespace vks::gpu::vk {
namespace {

int rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 4;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 3;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 1;
    default: return 0;
  }
}

const char* kind_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool has_layer(const char* name) {
  uint32_t n = 0;
  vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  vkEnumerateInstanceLayerProperties(&n, layers.data());
  return std::any_of(layers.begin(), layers.end(), [&](const auto& l) { return std::strcmp(l.layerName, name) == 0; });
}

// Keeps every shared object loaded so far resident for the life of the process (a
// RTLD_NODELETE reference; libraries linked at start are unaffected). The loader dlcloses the
// driver in vkDestroyInstance; Mesa's lavapipe (22.3) leaves a 128-byte block referenced only
// from its own data, which LeakSanitizer then reports as a leak from an unloaded module. A
// resident driver keeps it reachable, and also outlives any driver thread still winding down.
void pin_loaded_modules() {
  std::vector<std::string> paths;  // collected first: no dlopen inside dl_iterate_phdr's lock
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        if (info->dlpi_name && info->dlpi_name[0] == '/') static_cast<std::vector<std::string>*>(out)->emplace_back(info->dlpi_name);
        return 0;
      },
      &paths);
  for (const auto& p : paths) dlopen(p.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

}  // namespace

std::string feature_list(const device_caps& c) {
  std::string s;
  auto add = [&](bool on, const std::string& name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(c.storage16, "storage16");
  add(c.float16, "fp16");
  add(c.storage8, "storage8");
  add(c.int8, "int8");
  add(c.integer_dot, c.integer_dot_fast ? "int-dot(accelerated)" : "int-dot");
  add(c.subgroup_arith, "subgroup-arith");
  add(c.size_control, "subgroup-size " + std::to_string(c.min_subgroup) + "-" + std::to_string(c.max_subgroup));
  return s.empty() ? "none" : s;
}

result<std::unique_ptr<context>> context::create(const vk_options& opts) {
  std::unique_ptr<context> c(new context());
  uint32_t api = 0;
  if (vkEnumerateInstanceVersion(&api) != VK_SUCCESS || api < VK_API_VERSION_1_2)
    return fail(errc::unsupported, "vulkan: no Vulkan 1.2 loader");
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "vkserve";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.pApplicationInfo = &app;
  const char* validation = "VK_LAYER_KHRONOS_validation";
  if (opts.validation) {
    if (has_layer(validation)) {
      ici.enabledLayerCount = 1;
      ici.ppEnabledLayerNames = &validation;
    } else {
      log::warn("vulkan: validation requested but {} is not installed", validation);
    }
  }
  VkResult r = vkCreateInstance(&ici, nullptr, &c->inst_);
  if (r != VK_SUCCESS) return fail(errc::unsupported, "vulkan: cannot create an instance (no driver?)");
  pin_loaded_modules();  // drivers are loaded now; again below for what device creation loads
  VKS_TRY(c->pick_device(opts));
  VKS_TRY(c->create_device());
  pin_loaded_modules();
  return c;
}

context::~context() {
  if (dev_) vkDestroyDevice(dev_, nullptr);
  if (inst_) vkDestroyInstance(inst_, nullptr);
}

int select_device(std::span<const device_candidate> devs, const std::string& want) {
  const bool by_index = !want.empty() &&
                        std::all_of(want.begin(), want.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); });
  int best = -1, best_rank = -1;
  for (size_t i = 0; i < devs.size(); ++i) {
    if (devs[i].api_version < VK_API_VERSION_1_2) continue;
    if (by_index) {
      if (std::to_string(i) == want) return static_cast<int>(i);
      continue;
    }
    if (!want.empty() && lower(devs[i].name).find(lower(want)) == std::string::npos) continue;
    if (rank(devs[i].type) > best_rank) {
      best_rank = rank(devs[i].type);
      best = static_cast<int>(i);
    }
  }
  return best;
}

result<void> context::pick_device(const vk_options& opts) {
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(inst_, &n, nullptr);
  std::vector<VkPhysicalDevice> devs(n);
  vkEnumeratePhysicalDevices(inst_, &n, devs.data());
  std::vector<device_candidate> cands;
  for (auto d : devs) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(d, &p);
    cands.push_back({p.deviceName, p.deviceType, p.apiVersion});
    log::debug("vulkan: device {}: '{}' ({}), Vulkan {}.{}", cands.size() - 1, cands.back().name, kind_name(p.deviceType),
               VK_API_VERSION_MAJOR(p.apiVersion), VK_API_VERSION_MINOR(p.apiVersion));
  }
  const int best = select_device(cands, opts.device);
  if (best < 0)
    return fail(opts.device.empty() ? errc::unsupported : errc::not_found,
                opts.device.empty() ? "vulkan: no Vulkan 1.2 device found" : "vulkan: no device matches '" + opts.device + "'");
  phys_ = devs[static_cast<size_t>(best)];

  VkPhysicalDeviceSubgroupProperties sg{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceMaintenance3Properties m3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  m3.pNext = &sg;
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &m3;
  vkGetPhysicalDeviceProperties2(phys_, &p2);
  const auto& lim = p2.properties.limits;
  caps_.name = p2.properties.deviceName;
  caps_.vendor_id = p2.properties.vendorID;
  caps_.device_id = p2.properties.deviceID;
  caps_.subgroup_arith = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                         (sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
  caps_.kind = kind_name(p2.properties.deviceType);
  caps_.subgroup_size = sg.subgroupSize;
  caps_.subgroup_ballot = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                          (sg.supportedOperations & VK_SUBGROUP_FEATURE_BALLOT_BIT);
  caps_.max_storage_range = lim.maxStorageBufferRange;
  if (opts.max_storage_range > 0)  // test hook: an artificial binding limit (never below 64 KiB)
    caps_.max_storage_range = std::min<uint64_t>(caps_.max_storage_range, std::max<uint64_t>(opts.max_storage_range, 64 << 10));
  caps_.max_alloc = m3.maxMemoryAllocationSize;
  caps_.min_storage_align = std::max<uint64_t>(lim.minStorageBufferOffsetAlignment, 4);
  caps_.shared_memory = lim.maxComputeSharedMemorySize;
  if (opts.max_shared_memory > 0)  // test hook: a smaller shared memory (never below Vulkan's 16 KiB)
    caps_.shared_memory = std::min(caps_.shared_memory, std::max<uint32_t>(opts.max_shared_memory, 16384));
  caps_.max_texel_elements = lim.maxTexelBufferElements;
  caps_.min_texel_align = std::max<uint64_t>(lim.minTexelBufferOffsetAlignment, 4);
  caps_.texel_views = true;
  for (VkFormat f : {VK_FORMAT_R32G32B32A32_UINT, VK_FORMAT_R32G32B32A32_SFLOAT}) {
    VkFormatProperties fp;
    vkGetPhysicalDeviceFormatProperties(phys_, f, &fp);
    caps_.texel_views = caps_.texel_views && (fp.bufferFeatures & VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT);
  }
  caps_.max_wg_invocations = lim.maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; ++i) caps_.max_wg_count[i] = lim.maxComputeWorkGroupCount[i];
  caps_.timestamp_period_ns = lim.timestampPeriod;
  vkGetPhysicalDeviceMemoryProperties(phys_, &memprops_);
  for (uint32_t h = 0; h < memprops_.memoryHeapCount; ++h)
    if (memprops_.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      caps_.device_local_bytes = std::max<uint64_t>(caps_.device_local_bytes, memprops_.memoryHeaps[h].size);
  query_features();
  return ok();
}

// The optional features vkserve's kernels can use (device_caps): what the device offers is
// recorded here and enabled by create_device. Extension structs are chained only when the
// device lists the extension.
void context::query_features() {
  uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(phys_, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  vkEnumerateDeviceExtensionProperties(phys_, nullptr, &n, exts.data());
  auto has = [&](const char* e) {
    return std::any_of(exts.begin(), exts.end(), [&](const auto& x) { return std::strcmp(x.extensionName, e) == 0; });
  };
  ext_size_control_ = has(VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
  ext_integer_dot_ = has(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);

  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceSubgroupSizeControlFeaturesEXT fsc{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT};
  VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR fid{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR};
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f11.pNext = &f12;
  f2.pNext = &f11;
  void** tail = &f12.pNext;
  if (ext_size_control_) *tail = &fsc, tail = &fsc.pNext;
  if (ext_integer_dot_) *tail = &fid, tail = &fid.pNext;
  vkGetPhysicalDeviceFeatures2(phys_, &f2);
  caps_.storage16 = f11.storageBuffer16BitAccess;
  caps_.float16 = f12.shaderFloat16;
  caps_.storage8 = f12.storageBuffer8BitAccess;
  caps_.int8 = f12.shaderInt8;
  caps_.integer_dot = ext_integer_dot_ && fid.shaderIntegerDotProduct;

  VkPhysicalDeviceSubgroupSizeControlPropertiesEXT psc{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES_EXT};
  VkPhysicalDeviceShaderIntegerDotProductPropertiesKHR pid{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES_KHR};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  tail = &p2.pNext;
  if (ext_size_control_) *tail = &psc, tail = &psc.pNext;
  if (ext_integer_dot_) *tail = &pid, tail = &pid.pNext;
  vkGetPhysicalDeviceProperties2(phys_, &p2);
  caps_.integer_dot_fast = caps_.integer_dot && pid.integerDotProduct4x8BitPackedSignedAccelerated;
  caps_.size_control = ext_size_control_ && fsc.subgroupSizeControl && fsc.computeFullSubgroups &&
                       (psc.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) && psc.minSubgroupSize > 0;
  if (caps_.size_control) {
    caps_.min_subgroup = psc.minSubgroupSize;
    caps_.max_subgroup = psc.maxSubgroupSize;
  }
}

result<void> context::create_device() {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(phys_, &n, nullptr);
  std::vector<VkQueueFamilyProperties> fams(n);
  vkGetPhysicalDeviceQueueFamilyProperties(phys_, &n, fams.data());
  int pick = -1;  // the first compute family, preferring the universal (graphics+compute) one
  for (uint32_t i = 0; i < n; ++i) {
    if (!(fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    if (pick < 0 || ((fams[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) &&
                     !(fams[static_cast<size_t>(pick)].queueFlags & VK_QUEUE_GRAPHICS_BIT)))
      pick = static_cast<int>(i);
  }
  if (pick < 0) return fail(errc::unsupported, "vulkan: device has no compute queue");
  qfam_ = static_cast<uint32_t>(pick);
  caps_.timestamps = fams[qfam_].timestampValidBits > 0;

  const float prio = 1.f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = qfam_;
  qci.queueCount = 1;
  qci.pQueuePriorities = &prio;
  // Exactly the features recorded in caps_ (query_features), nothing else.
  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceSubgroupSizeControlFeaturesEXT fsc{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT};
  VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR fid{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR};
  f11.storageBuffer16BitAccess = caps_.storage16;
  f12.shaderFloat16 = caps_.float16;
  f12.storageBuffer8BitAccess = caps_.storage8;
  f12.shaderInt8 = caps_.int8;
  f11.pNext = &f12;
  std::vector<const char*> exts;
  void** tail = &f12.pNext;
  if (caps_.size_control) {
    fsc.subgroupSizeControl = fsc.computeFullSubgroups = VK_TRUE;
    *tail = &fsc, tail = &fsc.pNext;
    exts.push_back(VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
  }
  if (caps_.integer_dot) {
    fid.shaderIntegerDotProduct = VK_TRUE;
    *tail = &fid, tail = &fid.pNext;
    exts.push_back(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
  }
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = &f11;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = static_cast<uint32_t>(exts.size());
  dci.ppEnabledExtensionNames = exts.data();
  VKS_VK_TRY(vkCreateDevice(phys_, &dci, nullptr, &dev_), "vkCreateDevice");
  vkGetDeviceQueue(dev_, qfam_, 0, &queue_);
  log::info("vulkan: using '{}' ({}, vendor {:04x}): subgroup {}, maxStorageBufferRange {} MiB, maxMemoryAllocationSize {} MiB, "
            "shared memory {} KiB, device-local {} MiB; features: {}",
            caps_.name, caps_.kind, caps_.vendor_id, caps_.subgroup_size, caps_.max_storage_range >> 20,
            caps_.max_alloc >> 20, caps_.shared_memory >> 10, caps_.device_local_bytes >> 20, feature_list(caps_));
  return ok();
}

}  // namespace vks::gpu::vk
