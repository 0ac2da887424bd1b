// SPDX-License-Identifier: GPL-2.0
/* The one place that instantiates the tracepoints of vroce_trace.h. */

#define CREATE_TRACE_POINTS
#include "vroce_trace.h"
