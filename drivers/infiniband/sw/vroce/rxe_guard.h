/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_RXE_GUARD_H
#define _VROCE_RXE_GUARD_H

/* rxe_guard.c APIs: */
int vroce_rxe_guard_init(void);
void vroce_rxe_guard_exit(void);
int vroce_rxe_guard_check(void);

#endif /* _VROCE_RXE_GUARD_H */
