// The platform reaching up into the runtime: the violation the test expects.
#pragma once
#include "core/units.h"
#include "sim/runtime/executor.h"
