// A header of the base layer.
#pragma once
