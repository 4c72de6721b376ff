#include "drivers/inventory_machine.h"

#include <nlohmann/json.hpp>

#include "core/config.h"
#include "core/errors.h"
#include "hardware/catalog.h"

namespace cs::drv {

coll::Machine inventory_machine(const std::string& catalog_gpu, int gpus_per_node, int nodes, const std::string& nic,
                                const std::string& origin, const std::string& where) {
  const hw::Catalog& catalog = hw::Catalog::builtin();
  const hw::GpuSpec& gpu = catalog.gpu(catalog_gpu, origin, where);
  nlohmann::json server = {{"count", nodes}, {"name", "node"}, {"gpu", gpu.name}, {"gpus", gpus_per_node}};
  if (!gpu.nvlink.empty()) {
    server["template"] = "nvswitch";
    server["nvlink"] = gpu.nvlink;
  } else {
    server["template"] = "pcie";
  }
  if (nodes > 1) {
    server["nic"] = nic;
    server["nics"] = gpus_per_node;
  }
  const nlohmann::json doc = {
      {"name", "calibration-" + gpu.name},
      {"description", "the machine a calibration profile was measured on, rebuilt from the hardware catalog"},
      {"servers", nlohmann::json::array({server})},
      {"fabric", {{"type", nodes > 1 ? "star" : "none"}}}};
  return coll::build_machine(ConfigDocument::from_json(doc, origin));
}

coll::Machine inventory_machine(const cal::Inventory& inv, const std::string& nic, const std::string& origin) {
  if (inv.gpus.empty()) throw ConfigError(origin, "/inventory/gpus", "the profile lists no GPU");
  const int nodes = std::max(1, inv.nodes);
  const int per_node = std::max(1, static_cast<int>(inv.gpus.size()) / nodes);
  if (inv.gpus.front().catalog_gpu.empty()) {
    throw ConfigError(origin, "/inventory/gpus/0/catalog_gpu",
                      "the profile's GPU " + inv.gpus.front().name + " has no hardware catalog name, so its cluster cannot be rebuilt");
  }
  return inventory_machine(inv.gpus.front().catalog_gpu, per_node, nodes, nic, origin, "/inventory/gpus/0/catalog_gpu");
}

}  // namespace cs::drv
