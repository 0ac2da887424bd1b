/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_UBUF_H
#define _VROCE_UBUF_H

#include <linux/types.h>

void *vroce_ubuf_alloc(size_t size);

#endif
