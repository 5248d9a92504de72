/* test_classify.c — placeholder until the classifier's unit tests land. */
#include <criterion/criterion.h>

#include "classify.h"

Test(classify, memory_context) { cr_expect_eq(ana_classify("x", ANA_CTX_MEMORY).cls, ANA_CLASS_MEMORY); }
