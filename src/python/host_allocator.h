// HostMemAllocator as Python sees it (alias MooncakeHostMemAllocator): shared memory a
// standalone kvpool node can map, so it moves page bytes straight into the engine's pages.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

namespace kvpool::python {

// Binds HostMemAllocator (alloc/free with int addresses, Mooncake's spelling) and HostBuffer
// (an owning allocation with the buffer protocol, freed when the last view of it goes).
void BindHostAllocator(pybind11::module_& m);

}  // namespace kvpool::python
