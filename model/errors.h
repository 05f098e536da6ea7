// The engine's typed errors are the public API's (include/infer/errors.h).
#pragma once

#include "infer/errors.h"
