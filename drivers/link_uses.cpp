#include "drivers/link_uses.h"

#include <algorithm>

namespace cs::drv {

std::vector<results::LinkUse> link_uses(net::FlowNetwork& net, std::size_t cluster_links, Duration run) {
  std::vector<results::LinkUse> links;
  const double seconds = to_seconds(run);
  for (std::uint32_t l = 0; l < cluster_links; ++l) {
    const net::LinkStats st = net.link_stats(topo::LinkId{l});
    if (st.bytes.value() == 0) continue;
    const double capacity = net.capacity(topo::LinkId{l}).value();
    links.push_back({topo::LinkId{l}, st.bytes, st.busy, static_cast<double>(st.bytes.value()) / (capacity * seconds)});
  }
  std::stable_sort(links.begin(), links.end(),
                   [](const results::LinkUse& a, const results::LinkUse& b) { return a.utilization > b.utilization; });
  return links;
}

}  // namespace cs::drv
