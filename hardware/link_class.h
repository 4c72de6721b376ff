// Classes of link, for models that treat links of one technology alike: NVLink (GPU to GPU or
// to an NVSwitch), PCIe (GPU, NIC and host through PCIe switches) and the network (NICs,
// switches and storage).
#pragma once

#include <cstdint>

#include "core/enum_names.h"

namespace cs::hw {

enum class LinkClass : std::uint8_t { kNvlink = 0, kPcie = 1, kNetwork = 2 };
inline constexpr int kLinkClassCount = 3;
inline constexpr EnumName<LinkClass> kLinkClassNames[] = {
    {LinkClass::kNvlink, "nvlink"}, {LinkClass::kPcie, "pcie"}, {LinkClass::kNetwork, "network"}};
inline const char* to_string(LinkClass c) { return enum_name(kLinkClassNames, c); }

}  // namespace cs::hw
