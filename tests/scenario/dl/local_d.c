/* local_d — defines ana_dl_local_value ('d'); reachable only through local_c's scope. */
char ana_dl_local_value(void) { return 'd'; }
