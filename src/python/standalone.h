// Whether this build has standalone mode (issue 3: include/kvpool/host_allocator.h and
// Client::SetupStandalone). Without it the binding still builds: setup_dummy, the host allocator
// and alloc_from_mem_pool report NOT_SUPPORTED. (-DKVPOOL_PY_HAS_STANDALONE=0 forces that.)
#pragma once

#ifndef KVPOOL_PY_HAS_STANDALONE
#if __has_include("kvpool/host_allocator.h")
#define KVPOOL_PY_HAS_STANDALONE 1
#else
#define KVPOOL_PY_HAS_STANDALONE 0
#endif
#endif

#if KVPOOL_PY_HAS_STANDALONE
#include "kvpool/host_allocator.h"
#endif
