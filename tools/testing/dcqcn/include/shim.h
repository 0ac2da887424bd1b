/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Just enough of the kernel's headers for dcqcn.c (pure integer code) to
 * build and run its self-tests in user space. Every header in include/linux
 * includes this file.
 */
#ifndef _VROCE_DCQCN_SHIM_H
#define _VROCE_DCQCN_SHIM_H

#define EINVAL		22
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef uint8_t u8;
typedef uint32_t u32;
typedef unsigned long long u64;

#define U32_MAX		UINT32_MAX
#define U64_MAX		UINT64_MAX
#define NSEC_PER_USEC	1000L
#define BIT(n)		(1UL << (n))
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

#define READ_ONCE(x)		(*(const volatile typeof(x) *)&(x))
#define WRITE_ONCE(x, v)	(*(volatile typeof(x) *)&(x) = (v))

#define min(a, b)	((a) < (b) ? (a) : (b))
#define max(a, b)	((a) > (b) ? (a) : (b))
#define min_t(t, a, b)	min((t)(a), (t)(b))
#define max_t(t, a, b)	max((t)(a), (t)(b))
#define DIV_ROUND_UP(n, d)	(((n) + (d) - 1) / (d))

#define pr_err(...)	fprintf(stderr, __VA_ARGS__)
#define pr_info(...)	printf(__VA_ARGS__)

static inline u64 div64_u64(u64 a, u64 b)
{
	return a / b;
}

static inline u64 div_u64(u64 a, u32 b)
{
	return a / b;
}

static inline u64 div_u64_rem(u64 a, u32 b, u32 *rem)
{
	*rem = a % b;
	return a / b;
}

#endif
