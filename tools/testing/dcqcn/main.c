// SPDX-License-Identifier: GPL-2.0
/* Runs the DCQCN self-tests (selftest/dcqcn.c) in user space. */
#include <stdbool.h>

bool vroce_dcqcn_selftest(void);

int main(void)
{
	return vroce_dcqcn_selftest() ? 0 : 1;
}
