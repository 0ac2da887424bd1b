// SPDX-License-Identifier: GPL-2.0
/*
 * Self-tests of the device-level congestion-control state (cc.c), run at
 * module load with VROCE_DEBUG on a private, unregistered vroce_dev: the
 * enables after init, the ECN bits per priority, and the per-QP hooks.
 */

static bool cc_st_ok(bool ok, const char *what, int line)
{
	if (!ok)
		pr_err("cc self-test line %d: %s\n", line, what);
	return ok;
}

#define CC_ST_OK(cond) cc_st_ok(!!(cond), #cond, __LINE__)

static bool cc_st_ecn(struct vroce_dev *vdev)
{
	bool ok = true;
	u8 p;

	for (p = 0; p < VROCE_CC_NR_PRIOS; p++)
		ok &= CC_ST_OK(vroce_cc_ecn(vdev, p) == INET_ECN_ECT_0) &&
		      CC_ST_OK(vroce_cc_np_enabled(vdev, p)) &&
		      CC_ST_OK(vroce_cc_rp_enabled(vdev, p));
	/* RP off on priority 3: no ECT there, nothing else changes. */
	clear_bit(3, &vdev->cc.rp_enable);
	for (p = 0; p < VROCE_CC_NR_PRIOS; p++)
		ok &= CC_ST_OK(vroce_cc_ecn(vdev, p) ==
			       (p == 3 ? INET_ECN_NOT_ECT : INET_ECN_ECT_0)) &&
		      CC_ST_OK(vroce_cc_np_enabled(vdev, p));
	/* NP off on priority 5 leaves the ECN bits alone. */
	clear_bit(5, &vdev->cc.np_enable);
	ok &= CC_ST_OK(!vroce_cc_np_enabled(vdev, 5)) &&
	      CC_ST_OK(vroce_cc_ecn(vdev, 5) == INET_ECN_ECT_0);
	/* The ECN field keeps the DSCP when ORed in. */
	ok &= CC_ST_OK(((48 << 2) | vroce_cc_ecn(vdev, 0)) == 0xc2);
	return ok;
}

static bool cc_st_qp(struct vroce_dev *vdev)
{
	struct vroce_qp_cc qcc;
	bool ok;

	vroce_cc_qp_init(vdev, &qcc, 25000000);
	ok = CC_ST_OK(vroce_dcqcn_rate_kbps(&qcc.rp) == 0) &&
	     CC_ST_OK(qcc.rp.rc_kbps == 25000000) &&
	     CC_ST_OK(vroce_np_should_send_cnp(&qcc.np, &vdev->cc.params, 0));
	vroce_dcqcn_on_cnp(&qcc.rp, &vdev->cc.params, 1000);
	ok &= CC_ST_OK(vroce_dcqcn_rate_kbps(&qcc.rp) == 25000000);
	vroce_cc_qp_uninit(vdev, &qcc);
	ok &= CC_ST_OK(vroce_dcqcn_rate_kbps(&qcc.rp) == 0);

	/* The device's knobs reach the QP: rp_max_rate caps its start. */
	ok &= CC_ST_OK(!vroce_cc_knob_set(&vdev->cc.params,
					  VROCE_CC_RP_MAX_RATE, 1000));
	vroce_cc_qp_init(vdev, &qcc, 25000000);
	vroce_dcqcn_on_cnp(&qcc.rp, &vdev->cc.params, 1000);
	ok &= CC_ST_OK(vroce_dcqcn_rate_kbps(&qcc.rp) == 1000000);
	vroce_cc_qp_uninit(vdev, &qcc);
	return ok;
}

bool vroce_cc_selftest(void)
{
	struct vroce_dev *vdev;
	bool ok = false;

	vdev = kzalloc(sizeof(*vdev), GFP_KERNEL);
	if (vdev) {
		vroce_cc_init(&vdev->cc);
		ok = cc_st_ecn(vdev) && cc_st_qp(vdev);
		kfree(vdev);
	}
	if (ok)
		pr_info("cc self-tests: pass\n");
	else
		pr_err("cc self-tests: FAIL\n");
	return ok;
}
