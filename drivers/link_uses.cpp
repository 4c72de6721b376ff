#include "drivers/link_uses.h"

#include <algorithm>

namespace cs::drv {

std::vector<results::LinkUse> link_uses(net::FlowNetwork& net, std::size_t cluster_links, Duration run,
                                        const coll::NetworkFold* fold) {
  std::vector<results::LinkUse> links;
  const double seconds = to_seconds(run);
  for (std::uint32_t l = 0; l < cluster_links; ++l) {
    const net::LinkStats st = net.link_stats(topo::LinkId{l});
    if (st.bytes.value() == 0) continue;
    const double capacity = net.capacity(topo::LinkId{l}).value();
    const double utilization = static_cast<double>(st.bytes.value()) / (capacity * seconds);
    if (!fold) {
      links.push_back({topo::LinkId{l}, st.bytes, st.busy, utilization});
      continue;
    }
    const std::vector<topo::LinkId> members = fold->orbits().members(topo::LinkId{l});
    const double share = static_cast<double>(fold->servers()) / static_cast<double>(members.size());
    const Bytes bytes{static_cast<std::int64_t>(static_cast<double>(st.bytes.value()) * share + 0.5)};
    for (const topo::LinkId m : members) links.push_back({m, bytes, st.busy, utilization});
  }
  if (fold) std::sort(links.begin(), links.end(), [](const results::LinkUse& a, const results::LinkUse& b) { return a.link.value < b.link.value; });
  std::stable_sort(links.begin(), links.end(),
                   [](const results::LinkUse& a, const results::LinkUse& b) { return a.utilization > b.utilization; });
  return links;
}

}  // namespace cs::drv
