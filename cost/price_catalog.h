// The price and power catalog: what servers, switches and cables cost and draw, and the facility's
// PUE, electricity price and amortization (configs/prices/prices.json, compiled into the binary;
// docs/cost-model.md). Every number is a sourced value (core/sourced_value.h) with the hardware
// catalog's status words; the readers keep what each says of itself, so that a cost can list the
// assumed figures it rests on.
//
// Replacing figures: `--prices FILE` reads a whole document of the same format instead of the
// built-in one; `--set-price /json/pointer=value` changes one value ("/servers/H100-SXM/price_usd/
// value=280000", or the sourced object's "value" left out: "/facility/pue=1.2"). A replaced value
// is the user's (SourcedFact kind "user").
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/sourced_value.h"
#include "core/units.h"

namespace cs::cost {

// An 8-GPU (or n-GPU) server, keyed by the hardware catalog's GPU name.
struct ServerPrice {
  std::string gpu;              // "H100-SXM"
  int gpus = 0;                 // GPUs per priced server
  Money price{0};               // the whole server, NICs included
  Power power_max{0};           // the server's maximum draw (datasheet), GPUs included
  Power gpu_idle{0};            // one GPU idle; its busy draw is the GPU's TDP (hardware catalog)
  std::optional<Money> cloud_per_gpu_hour;  // on-demand rent, when the catalog knows one
  std::string file, path;       // where it was read: "/servers/H100-SXM"
};

enum class NetworkFamily : std::uint8_t { kInfiniband, kEthernet };

struct SwitchPrice {
  std::string name;             // the hardware catalog's switch name ("Quantum-2-QM9700")
  NetworkFamily family = NetworkFamily::kInfiniband;
  Bandwidth port_speed{0};      // the speed the price is for; the radix at it is the hardware catalog's
  Money price{0};
  Power power{0};               // without optics
  std::string path;
};

struct LinkPrice {
  Bandwidth speed{0};
  Money optical{0};             // two transceivers and a fiber
  Money copper{0};              // a passive direct-attach cable
  Power transceiver{0};         // one transceiver (two per optical link)
  std::string path;             // "/links/400Gbps"
};

enum class Medium : std::uint8_t { kOptical, kCopper };

struct Facility {
  double pue = 1;                  // facility power / IT power
  Money per_kwh{0};                // electricity, per kWh
  double amortization_years = 0;   // capital spread over this life
  double average_load = 0;         // average draw while training / maximum draw (Epoch AI's 0.75)
  Money operations_per_server{0};  // facility and operations over the life, per server
  Power liquid_cooling_above{0};   // per GPU: above this TDP racks need liquid cooling
};

class PriceCatalog {
 public:
  // The catalog compiled into the binary.
  static const PriceCatalog& builtin();
  // A catalog from a document's text (`name` is what errors call it), then overrides applied.
  // Errors are ConfigErrors at the file and JSON path; a negative or zero price is one.
  static PriceCatalog parse(const std::string& text, const std::string& name,
                            const std::vector<std::string>& overrides = {}, const std::string& overrides_where = "--set-price");
  // `--prices FILE` (empty: the built-in document) with `--set-price` overrides.
  static PriceCatalog load(const std::string& file, const std::vector<std::string>& overrides);

  const std::string& file() const { return file_; }
  // The server priced for this GPU; ConfigError at `file`/`path` naming the GPUs the catalog prices.
  const ServerPrice& server(const std::string& gpu, const std::string& file, const std::string& path) const;
  const ServerPrice* find_server(const std::string& gpu) const;
  // The switch of this family priced at this port speed; null when none is.
  const SwitchPrice* find_switch(NetworkFamily family, Bandwidth port_speed) const;
  // The cable prices at this speed; null when none are.
  const LinkPrice* find_link(Bandwidth speed) const;
  Medium medium(int tier) const { return media_[tier < 1 ? 1 : (tier > 3 ? 3 : tier)]; }
  const Facility& facility() const { return facility_; }
  const std::map<std::string, ServerPrice>& servers() const { return servers_; }
  const std::vector<SwitchPrice>& switches() const { return switches_; }
  // The assumed or fitted figures among `paths` (JSON paths of sourced values), in order.
  std::vector<SourcedFact> judgements(const std::vector<std::string>& paths) const;
  const SourcedFact* fact(const std::string& path) const;

 private:
  std::string file_;
  std::map<std::string, ServerPrice> servers_;
  std::vector<SwitchPrice> switches_;
  std::vector<LinkPrice> links_;
  Medium media_[4] = {Medium::kOptical, Medium::kOptical, Medium::kOptical, Medium::kOptical};
  Facility facility_;
  std::map<std::string, SourcedFact> facts_;
};

// The price documents compiled into the binary (generated by cmake/EmbedFiles.cmake).
const std::vector<std::pair<std::string, std::string>>& builtin_price_documents();

}  // namespace cs::cost
