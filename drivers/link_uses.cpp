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
    const coll::NetworkFold::Unfolded members = fold->unfold(topo::LinkId{l}, st.bytes);
    for (const topo::LinkId m : members.links) links.push_back({m, members.bytes, st.busy, utilization});
  }
  if (fold) std::sort(links.begin(), links.end(), [](const results::LinkUse& a, const results::LinkUse& b) { return a.link.value < b.link.value; });
  std::stable_sort(links.begin(), links.end(),
                   [](const results::LinkUse& a, const results::LinkUse& b) { return a.utilization > b.utilization; });
  return links;
}

}  // namespace cs::drv
