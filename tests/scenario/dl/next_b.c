/* next_b — the second definition of ana_dl_value ('b'), at version ANA_DL_TEST_1. */
char ana_dl_value(void) { return 'b'; }
