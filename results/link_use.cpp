#include "results/link_use.h"

#include <cstdio>

namespace cs::results {

std::string links_csv(const topo::Cluster& cluster, std::span<const LinkUse> links) {
  std::string out = "src,dst,class,tier,bytes,busy_s,utilization\n";
  char buf[96];
  for (const LinkUse& u : links) {
    const topo::LinkInfo& l = cluster.link(u.link);
    std::snprintf(buf, sizeof buf, ",%s,%d,%lld,%.12g,%.6f\n", hw::to_string(l.link_class), l.tier,
                  static_cast<long long>(u.bytes.value()), to_seconds(u.busy), u.utilization);
    out += cluster.node(l.src).name + "," + cluster.node(l.dst).name + buf;
  }
  return out;
}

}  // namespace cs::results
