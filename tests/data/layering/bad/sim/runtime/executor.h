// The runtime may use topology and core.
#pragma once
#include <boost/graph/adjacency_list.hpp>
#include "core/units.h"
#include "topology/router.h"
