// The API under test, the way the build offers it: `import dnngraph;` where the C++ module is
// built (DNNGRAPH_IMPORT_MODULE, from dnngraph_link_api), else the public headers, as code that
// cannot import modules sees them (g++ 13). Include it where a test would write the import.
#pragma once

#ifdef DNNGRAPH_IMPORT_MODULE
import dnngraph;
#else
#include "api/dnngraph.hpp"
#endif
