/* classify.c — the kernel classifier: API context first, then one ordered rule table over
 * the kernel's name (the table: classify_rules.c; docs/classification.md explains every family).
 *
 * A name is reduced before matching: a mangled name is demangled; the parameter list (the
 * balanced "(...)" that ends a demangled name) and the return type ("void ", or any text
 * before the last top-level space) are dropped; what remains is split into the function's
 * qualified name with every template argument list removed ("fn", e.g.
 * "at::native::vectorized_elementwise_kernel") and the text of those template arguments
 * ("args": the functor of an ATen template, the config of cutlass::Kernel, ...). Both are
 * lowercased. Parameters never decide a class (a cudnnTensorStruct or a curandState in a
 * parameter list says nothing about what the kernel computes).
 *
 * Tokens: fn in its original case is cut at every character that is not an ASCII letter
 * or digit, between a letter and a digit, between a lowercase and an uppercase letter,
 * and before the last capital of a run of capitals followed by a lowercase letter
 * ("_fp8_paged_mqa_logits", "rmsNormLamport", "KVCache" -> "fp 8 paged mqa logits",
 * "rms norm lamport", "kv cache"); the lowercased tokens are kept as " tok tok ... ".
 * The template arguments get tokens of their own (for the optimizer hint only).
 *
 * The table is searched in order and the first row that matches wins; a row matches when
 * its pattern is a prefix of fn (ANA_PAT_PREFIX), occurs in fn (ANA_PAT_CONTAINS), occurs
 * in fn's own name after its last "::" (ANA_PAT_BASE), or is a sequence of whole tokens of
 * fn (ANA_PAT_TOKEN; a '*' at either end of the pattern lets that token go on: "*gemm"
 * matches "sgemm", not "gemma"; "moe&dispatch" needs both sequences, anywhere in fn),
 * and, when it has one, its `within` pattern occurs in args. The last row matches
 * everything. Hints (forward/backward/optimizer) come from keywords of the whole reduced
 * name, or'ed with the row's own hints; they do not depend on the class.
 *
 * Pure: every call works on its own heap copy of the name; no global mutable state.
 * Part of analyses/: called by cli/, views/, import/ and other analyses; calls analyses/
 * and model/ only, never a view. */
#include "analyses/classify.h"
#include "analyses/classify_int.h"
#include "model/util.h"

#include <stdlib.h>
#include <string.h>



/* Rule numbers: the context rules, "no name", then the table. */
enum {
    ANA_RULE_CTX_GEMM = 0,
    ANA_RULE_CTX_CONV,
    ANA_RULE_CTX_ATTENTION,
    ANA_RULE_CTX_COMM,
    ANA_RULE_CTX_MEMORY,
    ANA_RULE_NO_NAME,
    ANA_RULE_COPY_ROW,
    ANA_RULE_TABLE,
};

static const char *const ana_fixed_rule_names[ANA_RULE_TABLE] = {
    "context: GEMM call", "context: convolution call", "context: attention call",
    "context: collective", "context: memcpy/memset", "name: none given",
    "name: a copy-engine row as a profiler prints it",
};

/* 1 when name is how a profiler prints a copy-engine memcpy/memset — not a kernel:
 * Nsight Systems and nvprof "[CUDA memcpy HtoD]", "[CUDA memset]"; Kineto "Memcpy HtoD
 * (Pageable -> Device)", "Memset (Device)"; TensorFlow "MemcpyH2D", "MemcpyD2H",
 * "MemcpyD2D". A kernel that copies (memcpy_kernel, "copy" in ATen) is not one. */
static int ana_copy_row(const char *name)
{
    static const char *const exact[] = { "MemcpyH2D", "MemcpyD2H", "MemcpyD2D", "MemcpyHtoD",
                                         "MemcpyDtoH", "MemcpyDtoD", NULL };
    static const char *const dirs[] = { "HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "DtoA", "AtoD",
                                        "AtoH", "HtoA", "AtoA", NULL };
    if (strncmp(name, "[CUDA memcpy", 12) == 0 || strncmp(name, "[CUDA memset", 12) == 0 ||
        strncmp(name, "[CUDA Unified Memory", 20) == 0)
        return 1;
    for (size_t i = 0; exact[i]; i++)
        if (strcmp(name, exact[i]) == 0)
            return 1;
    if (strncmp(name, "Memset (", 8) == 0 || strcmp(name, "Memset") == 0)
        return 1;
    if (strncmp(name, "Memcpy ", 7) == 0)
        for (size_t i = 0; dirs[i]; i++)
            if (strncmp(name + 7, dirs[i], 4) == 0 && (name[11] == 0 || name[11] == ' '))
                return 1;
    return 0;
}

static const char *const ana_class_names[ANA_CLASS_COUNT] = {
    "contraction", "normalization", "elementwise", "communication", "memory", "other",
};

/* The parts of a reduced name; all point into one allocation. */
typedef struct ana_kname {
    char *head; /* qualified name with template arguments, lowercase */
    char *fn;   /* head without any template argument list */
    char *base; /* the function's own name: fn after its last "::" */
    char *args; /* the template argument text, lists separated by '|' */
    char *ftok; /* the tokens of fn: " tok tok ... " (see ana_split) */
    char *otok; /* the tokens of base (fn's own name), same form */
    char *atok; /* the tokens of the template arguments, same form */
    void *mem;
} ana_kname;

/* Start of the parameter list: the '(' matching the ')' that ends s, or len when s does
 * not end with a balanced group (a bare cuBLAS name, a name cut short by a tool). */
static size_t ana_params_start(const char *s, size_t len)
{
    while (len > 0 && s[len - 1] == ' ')
        len--;
    if (len == 0 || s[len - 1] != ')')
        return len;
    int depth = 0;
    for (size_t i = len; i-- > 0;) {
        if (s[i] == ')')
            depth++;
        else if (s[i] == '(' && --depth == 0)
            return i > 0 ? i : len;
    }
    return len;
}

/* Walks s[0..n) keeping a bracket stack: '(' always nests, '<' nests unless inside
 * parentheses (so "(8)>(0)" in a template argument is not a bracket). Returns the index
 * after the last space outside every bracket: where the name starts after a return type. */
static size_t ana_base_start(const char *s, size_t n)
{
    char stack[64];
    int sp = 0, overflow = 0;
    size_t base = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        int top = sp > 0 ? stack[sp - 1] : 0;
        if (ch == '(' || (ch == '<' && top != '(')) {
            if (sp < (int)sizeof(stack))
                stack[sp++] = ch;
            else
                overflow++;
        } else if ((ch == ')' && top == '(') || (ch == '>' && top == '<')) {
            if (overflow)
                overflow--;
            else
                sp--;
        } else if (ch == ' ' && sp == 0 && !overflow) {
            base = i + 1;
        }
    }
    return base;
}

/* Token writer: appends the tokens of one text to a buffer that starts with ' ', keeps one
 * ' ' between tokens and (after ana_tok_end) ends with ' ' (see ana_split). */
typedef struct ana_tok {
    char *out;
    char prev; /* the previous character of this text, 0 after a separator */
} ana_tok;

static int ana_is_upper(char c) { return c >= 'A' && c <= 'Z'; }
static int ana_is_lower(char c) { return c >= 'a' && c <= 'z'; }
static int ana_is_digit(char c) { return c >= '0' && c <= '9'; }

static void ana_tok_break(ana_tok *t)
{
    if (t->out[-1] != ' ')
        *t->out++ = ' ';
}

/* Feeds ch (original case); next is the character after it in the name (0 at the end). */
static void ana_tok_put(ana_tok *t, char ch, char next)
{
    int up = ana_is_upper(ch), lo = ana_is_lower(ch), dig = ana_is_digit(ch);
    char p = t->prev;
    if (!up && !lo && !dig) {
        ana_tok_break(t);
        t->prev = 0;
        return;
    }
    if (p && ((ana_is_digit(p) != dig)                            /* "fp8" -> fp 8 */
              || (ana_is_lower(p) && up)                          /* "rmsNorm" -> rms norm */
              || (ana_is_upper(p) && up && ana_is_lower(next)))) /* "KVCache" -> kv cache */
        ana_tok_break(t);
    *t->out++ = up ? (char)(ch - 'A' + 'a') : ch;
    t->prev = ch;
}

static void ana_tok_end(ana_tok *t)
{
    ana_tok_break(t);
    *t->out = 0;
}

/* Splits s[0..n) into head (lowercased), fn (angle depth 0) and args (depth > 0), and the
 * tokens of fn and of args (see ana_kname). */
static void ana_split(const char *s, size_t n, ana_kname *k)
{
    char *f = k->fn, *a = k->args;
    ana_tok ft = { k->ftok, 0 }, at = { k->atok, 0 }, ot = { k->otok, 0 };
    *ft.out++ = ' ';
    *at.out++ = ' ';
    *ot.out++ = ' ';
    int depth = 0, parens = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = (char)((s[i] >= 'A' && s[i] <= 'Z') ? s[i] - 'A' + 'a' : s[i]);
        char next = i + 1 < n ? s[i + 1] : 0;
        k->head[i] = ch;
        if (ch == '(' && depth > 0)
            parens++;
        else if (ch == ')' && depth > 0 && parens > 0)
            parens--;
        if (ch == '<' && parens == 0) {
            if (depth++ == 0 && a != k->args)
                *a++ = '|';
            ana_tok_put(&ft, ' ', 0);
            ana_tok_put(&at, ' ', 0);
            continue;
        }
        if (ch == '>' && parens == 0 && depth > 0) {
            depth--;
            ana_tok_put(&ft, ' ', 0);
            ana_tok_put(&at, ' ', 0);
            continue;
        }
        if (depth == 0) {
            *f++ = ch;
            ana_tok_put(&ft, s[i], next);
            if (ch == ':' && next == ':') { /* a namespace ends: the own name starts over */
                ot.out = k->otok;
                ot.prev = 0;
                *ot.out++ = ' ';
            } else {
                ana_tok_put(&ot, s[i], next);
            }
        } else {
            *a++ = ch;
            ana_tok_put(&at, s[i], next);
        }
    }
    k->head[n] = *f = *a = 0;
    ana_tok_end(&ft);
    ana_tok_end(&at);
    ana_tok_end(&ot);
    /* the function's own name: after the last "::" of its qualified name */
    k->base = k->fn;
    for (char *q = strstr(k->fn, "::"); q; q = strstr(q + 2, "::"))
        k->base = q + 2;
}

static void ana_kname_init(ana_kname *k, const char *name)
{
    char *dem = ana_demangle(name);
    const char *s = dem ? dem : name;
    size_t len = strlen(s);
    size_t end = ana_params_start(s, len);
    while (end > 0 && s[end - 1] == ' ')
        end--;
    size_t start = ana_base_start(s, end);
    if (start >= end) /* nothing after the last space: keep it all */
        start = 0;
    size_t n = end - start;
    /* head, fn, args: n + 1 each; each token text: at most one ' ' before every char, a
     * trailing ' ' and the NUL */
    char *mem = ana_xmalloc(3 * (n + 1) + 3 * (2 * n + 2));
    k->mem = mem;
    k->head = mem;
    k->fn = mem + n + 1;
    k->args = mem + 2 * (n + 1);
    k->ftok = mem + 3 * (n + 1);
    k->atok = k->ftok + 2 * n + 2;
    k->otok = k->atok + 2 * n + 2;
    ana_split(s + start, n, k);
    free(dem);
}

/* Whether the token sequence pat ("mm", "delta rule") occurs in toks (" tok tok ... ").
 * A '*' at the start of pat lets its first token have any letters or digits before it
 * ("*gemm": sgemm), one at the end lets its last token go on ("adam*": adamw). */
static int ana_has_tokens(const char *toks, const char *pat)
{
    char buf[32];
    const char *core = pat;
    size_t len = strlen(pat);
    int any_before = len > 0 && pat[0] == '*';
    int any_after = len > 1 && pat[len - 1] == '*';
    if (any_before || any_after) {
        len -= (size_t)(any_before + any_after);
        if (len == 0 || len >= sizeof(buf))
            return 0;
        memcpy(buf, pat + any_before, len);
        buf[len] = 0;
        core = buf;
    }
    /* toks starts with ' ' and core does not: p[-1] is always in toks */
    for (const char *p = strstr(toks, core); p; p = strstr(p + 1, core))
        if ((any_before || p[-1] == ' ') && (any_after || p[len] == ' '))
            return 1;
    return 0;
}

/* Whether every '&'-separated part of pat is a token sequence of toks ("moe&dispatch":
 * both words, anywhere, in either order); a pat without '&' is one part. */
static int ana_has_all_tokens(const char *toks, const char *pat)
{
    const char *amp = strchr(pat, '&');
    if (!amp)
        return ana_has_tokens(toks, pat);
    char part[32];
    size_t len = (size_t)(amp - pat);
    if (len == 0 || len >= sizeof(part))
        return 0;
    memcpy(part, pat, len);
    part[len] = 0;
    return ana_has_tokens(toks, part) && ana_has_all_tokens(toks, amp + 1);
}

static int ana_rule_matches(const ana_rule *r, const ana_kname *k)
{
    int hit;
    switch (r->kind) {
    case ANA_PAT_PREFIX: hit = strncmp(k->fn, r->pat, strlen(r->pat)) == 0; break;
    case ANA_PAT_CONTAINS: hit = strstr(k->fn, r->pat) != NULL; break;
    case ANA_PAT_BASE: hit = strstr(k->base, r->pat) != NULL; break;
    case ANA_PAT_TOKEN: hit = ana_has_all_tokens(k->ftok, r->pat); break;
    case ANA_PAT_OWN_TOKEN: hit = ana_has_all_tokens(k->otok, r->pat); break;
    default: hit = 1; break;
    }
    return hit && (!r->within || strstr(k->args, r->within));
}

/* "lamb" but not "lambda" (every ATen lambda functor would read as an optimizer). */
static int ana_has_lamb(const char *s)
{
    for (const char *p = strstr(s, "lamb"); p; p = strstr(p + 4, "lamb"))
        if (p[4] != 'd')
            return 1;
    return 0;
}

static int ana_has_any(const char *s, const char *const *subs)
{
    for (; *subs; subs++)
        if (strstr(s, *subs))
            return 1;
    return 0;
}

/* Phase hints from keywords of the reduced name k (lowercase). Backward wins over forward:
 * an Inductor backward kernel often also names the forward op it differentiates. Adam is
 * a token ("adam", "adamw", "FusedAdam"; not "hadamard"). */
static uint8_t ana_keyword_hints(const ana_kname *k)
{
    const char *head = k->head;
    static const char *const bwd[] = { "backward", "bwd", "dgrad", "wgrad", "_bw_", "bn_bw",
                                       "updategradinput", "accgradparameters", "grad_input",
                                       "gradinput", "bprop", NULL };
    static const char *const fwd[] = { "forward", "fwd", "_fw_", "bn_fw", "fprop",
                                       "updateoutput", NULL };
    static const char *const opt[] = { "sgd", "adagrad", "rmsprop", "multi_tensor_apply",
                                       "optimizer", "momentum", "gradientdescent", NULL };
    uint8_t h = 0;
    if (ana_has_any(head, bwd))
        h |= ANA_HINT_BACKWARD;
    else if (ana_has_any(head, fwd))
        h |= ANA_HINT_FORWARD;
    if (ana_has_any(head, opt) || ana_has_lamb(head) || ana_has_tokens(k->ftok, "adam*")
        || ana_has_tokens(k->ftok, "*adam") || ana_has_tokens(k->atok, "adam*")
        || ana_has_tokens(k->atok, "*adam"))
        h |= ANA_HINT_OPTIMIZER;
    return h;
}

static int ana_ctx_rule(int ctx, ana_classification *c)
{
    switch (ctx) {
    case ANA_CTX_GEMM: c->cls = ANA_CLASS_CONTRACTION; c->rule = ANA_RULE_CTX_GEMM; return 1;
    case ANA_CTX_CONV: c->cls = ANA_CLASS_CONTRACTION; c->rule = ANA_RULE_CTX_CONV; return 1;
    case ANA_CTX_ATTENTION:
        c->cls = ANA_CLASS_CONTRACTION;
        c->rule = ANA_RULE_CTX_ATTENTION;
        return 1;
    case ANA_CTX_COMM: c->cls = ANA_CLASS_COMMUNICATION; c->rule = ANA_RULE_CTX_COMM; return 1;
    case ANA_CTX_MEMORY: c->cls = ANA_CLASS_MEMORY; c->rule = ANA_RULE_CTX_MEMORY; return 1;
    default: return 0;
    }
}

ana_classification ana_classify(const char *name, int ctx)
{
    ana_classification c = { ANA_CLASS_OTHER, 0, ANA_RULE_NO_NAME };
    int by_ctx = ana_ctx_rule(ctx, &c);
    if (!name || !*name)
        return c;
    if (!by_ctx && ana_copy_row(name)) {
        c.cls = ANA_CLASS_MEMORY;
        c.rule = ANA_RULE_COPY_ROW;
        return c;
    }
    ana_kname k;
    ana_kname_init(&k, name);
    c.hints = ana_keyword_hints(&k);
    if (!by_ctx) {
        for (size_t i = 0; i < ana_n_rules; i++)
            if (ana_rule_matches(&ana_rules[i], &k)) {
                c.cls = ana_rules[i].cls;
                c.hints |= ana_rules[i].hints;
                c.rule = (uint16_t)(ANA_RULE_TABLE + i);
                break;
            }
    }
    free(k.mem);
    return c;
}

const char *ana_class_name(int cls)
{
    return cls >= 0 && cls < ANA_CLASS_COUNT ? ana_class_names[cls] : NULL;
}

int ana_class_parse(const char *name)
{
    for (int i = 0; name && i < ANA_CLASS_COUNT; i++)
        if (strcmp(name, ana_class_names[i]) == 0)
            return i;
    return -1;
}

const char *ana_classify_rule_name(uint16_t rule)
{
    if (rule < ANA_RULE_TABLE)
        return ana_fixed_rule_names[rule];
    if ((size_t)(rule - ANA_RULE_TABLE) < ana_n_rules)
        return ana_rules[rule - ANA_RULE_TABLE].label;
    return "unknown rule";
}

const char *ana_ctx_name(int ctx)
{
    static const char *const n[ANA_CTX_COUNT] = { "none", "gemm", "conv", "attention",
                                                  "comm", "memory", "library" };
    return ctx >= 0 && ctx < ANA_CTX_COUNT ? n[ctx] : NULL;
}
