/*
 * activity.c — which activity records an observer wants, and handing them over.
 *
 * The device builds a record only for the kinds the observer (the sim's CUPTI) wants,
 * asked once per API call before the device lock is taken, and hands the records over
 * after releasing it: observer code never runs under the device lock.
 */
#include "sim.h"

unsigned ana_sim_wanted_kinds(void)
{
    unsigned want = 0;
    if (ana_sim_activity_wanted(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL))
        want |= ANA_SIM_WANT_KERNEL;
    if (ana_sim_activity_wanted(CUPTI_ACTIVITY_KIND_MEMCPY))
        want |= ANA_SIM_WANT_MEMCPY;
    if (ana_sim_activity_wanted(CUPTI_ACTIVITY_KIND_MEMCPY2))
        want |= ANA_SIM_WANT_MEMCPY2;
    if (ana_sim_activity_wanted(CUPTI_ACTIVITY_KIND_MEMSET))
        want |= ANA_SIM_WANT_MEMSET;
    return want;
}

void ana_sim_emit(const union ana_sim_record *recs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (recs[i].base.kind != CUPTI_ACTIVITY_KIND_INVALID)
            ana_sim_activity(&recs[i].base);
}
