// Everything of infer's public API.
#pragma once

#include "infer/classifier.h"
#include "infer/device.h"
#include "infer/environment.h"
#include "infer/errors.h"
#include "infer/preprocessing.h"
#include "infer/version.h"
