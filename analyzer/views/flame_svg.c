/* flame_svg.c — ana_flame_write_svg (flame.h): one standalone SVG in the manner of
 * flamegraph.pl, with its own script and nothing fetched from anywhere.
 *
 * The root is at the bottom; a frame is as wide as its total (a merged flame: the head's,
 * or the base's when the head is empty), children from the left in preorder, the frame's
 * self time the gap on their right. A frame narrower than 1/ANA_SVG_MIN_DIV of the whole
 * is not drawn (nor, being narrower still, anything above it); every drawn frame is one
 * <g class="f"> with a <title>, a <rect> and a <text>. Colours are a hash of the name in a
 * palette of its kind (host frames warm, kernels by class, memory by category); merged
 * flames are red where the head grew and blue where it shrank, by the change relative to
 * the larger of the two. Names are written as XML text: markup escaped, control bytes as
 * spaces, invalid UTF-8 as U+FFFD, so the file always parses.
 * Part of views/: called by the commands (cli/) and by other views; calls analyses/ and
 * model/, never cli/. */
#include "views/flame.h"

#include "analyses/classify.h"
#include "analyses/memcat.h"
#include "model/util.h"

#include <stdlib.h>
#include <string.h>

#define ANA_SVG_WIDTH 1200
#define ANA_SVG_PAD 10
#define ANA_SVG_FRAME_H 16
#define ANA_SVG_TOP 50    /* title and buttons */
#define ANA_SVG_BOTTOM 34 /* the details line */
#define ANA_SVG_CHAR_W 7  /* of the 12px font, to fit labels */
#define ANA_SVG_MIN_DIV 10000

/* Palettes: base colour and spread per channel. */
enum { ANA_PAL_HOT, ANA_PAL_GREY, ANA_PAL_PYTHON, ANA_PAL_CLASS, ANA_PAL_MCAT = ANA_PAL_CLASS + ANA_CLASS_COUNT,
       ANA_PAL_COUNT = ANA_PAL_MCAT + ANA_MCAT_COUNT };
static const uint8_t ana_svg_pal[ANA_PAL_COUNT][6] = {
    [ANA_PAL_HOT] = { 205, 0, 0, 50, 230, 55 },
    [ANA_PAL_GREY] = { 170, 170, 170, 30, 30, 30 },
    [ANA_PAL_PYTHON] = { 60, 130, 200, 40, 50, 40 },
    [ANA_PAL_CLASS + ANA_CLASS_CONTRACTION] = { 140, 90, 215, 40, 40, 40 },
    [ANA_PAL_CLASS + ANA_CLASS_NORMALIZATION] = { 70, 175, 70, 50, 50, 50 },
    [ANA_PAL_CLASS + ANA_CLASS_ELEMENTWISE] = { 50, 170, 190, 50, 50, 50 },
    [ANA_PAL_CLASS + ANA_CLASS_COMMUNICATION] = { 215, 195, 40, 35, 45, 50 },
    [ANA_PAL_CLASS + ANA_CLASS_MEMORY] = { 190, 130, 60, 45, 45, 40 },
    [ANA_PAL_CLASS + ANA_CLASS_OTHER] = { 150, 150, 150, 40, 40, 40 },
    [ANA_PAL_MCAT + ANA_MCAT_WEIGHTS] = { 60, 110, 210, 40, 40, 40 },
    [ANA_PAL_MCAT + ANA_MCAT_OPTIMIZER] = { 150, 90, 210, 40, 40, 40 },
    [ANA_PAL_MCAT + ANA_MCAT_GRADIENTS] = { 220, 130, 40, 30, 40, 40 },
    [ANA_PAL_MCAT + ANA_MCAT_ACTIVATIONS] = { 70, 175, 70, 50, 50, 50 },
    [ANA_PAL_MCAT + ANA_MCAT_TEMPORARY] = { 215, 195, 40, 35, 45, 50 },
    [ANA_PAL_MCAT + ANA_MCAT_FUNCTIONALITY] = { 50, 170, 190, 50, 50, 50 },
    [ANA_PAL_MCAT + ANA_MCAT_UNATTRIBUTED] = { 150, 150, 150, 40, 40, 40 },
};

/* Length of the UTF-8 character at s that XML allows (ana_utf8_len less U+FFFE and
 * U+FFFF, which XML excludes), or 0. */
static size_t ana_svg_utf8(const unsigned char *s, size_t n)
{
    size_t len = ana_utf8_len(s, n);
    if (len == 3 && s[0] == 0xef && s[1] == 0xbf && s[2] >= 0xbe)
        return 0;
    return len;
}

/* n bytes of s as XML character data (also fit for attribute values). */
static void ana_svg_text(const char *str, size_t n, FILE *out)
{
    const unsigned char *s = (const unsigned char *)str;
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t len = ana_svg_utf8(s + i, n - i);
        if (c == '<' || c == '>' || c == '&' || c == '"' || c == '\'')
            fputs(c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;"
                  : c == '"' ? "&quot;" : "&apos;", out);
        else if (c < 0x20 || c == 0x7f)
            fputc(' ', out);
        else if (len == 0)
            fputs("\xef\xbf\xbd", out);
        else
            fwrite(s + i, 1, len, out);
        i += len ? len : 1;
    }
}

/* The label that fits w pixels: the name, or its start and "..", or nothing. */
static void ana_svg_label(const char *name, double w, FILE *out)
{
    size_t fit = w > 2 * ANA_SVG_CHAR_W ? (size_t)((w - 6) / ANA_SVG_CHAR_W) : 0;
    size_t n = strlen(name);
    if (fit < 3)
        return;
    if (n <= fit) {
        ana_svg_text(name, n, out);
        return;
    }
    n = fit - 2;
    while (n > 0 && ((unsigned char)name[n] & 0xc0) == 0x80) /* not inside a character */
        n--;
    ana_svg_text(name, n, out);
    fputs("..", out);
}

static int ana_svg_palette(const ana_flame *f, size_t i, const uint8_t *leaf_child, int leaf)
{
    const char *name = f->names[f->nodes[i].name];
    if (f->metric == ANA_FLAME_GPU_TIME) {
        const char *cls_name = leaf ? f->names[f->nodes[f->nodes[i].parent].name] : name;
        int cls = (leaf || leaf_child[i]) ? ana_class_parse(cls_name) : -1;
        if (cls >= 0)
            return ANA_PAL_CLASS + cls;
    } else if (leaf && name[0] == '[') {
        for (int c = 0; c < ANA_MCAT_COUNT; c++) {
            const char *m = ana_mcat_name(c);
            size_t n = strlen(m);
            if (strncmp(name + 1, m, n) == 0 && strcmp(name + 1 + n, "]") == 0)
                return ANA_PAL_MCAT + c;
        }
    }
    return name[0] == '[' ? ANA_PAL_GREY : ana_flame_is_python(name) ? ANA_PAL_PYTHON : ANA_PAL_HOT;
}

static void ana_svg_color(const ana_flame *f, size_t i, int pal, char *buf, size_t cap)
{
    const ana_flame_node *n = &f->nodes[i];
    if (f->diff) {
        uint64_t big = n->total > n->base_total ? n->total : n->base_total;
        double d = big ? ((double)n->total - (double)n->base_total) / (double)big : 0;
        int fade = (int)(220 * (1 - (d < 0 ? -d : d)));
        snprintf(buf, cap, d >= 0 ? "rgb(255,%d,%d)" : "rgb(%d,%d,255)", fade, fade);
        return;
    }
    const char *name = f->names[n->name];
    uint64_t h = ana_fnv1a(name, strlen(name), ANA_FNV1A_SEED);
    const uint8_t *p = ana_svg_pal[pal];
    int c[3];
    for (int k = 0; k < 3; k++)
        c[k] = p[k] + (int)(p[k + 3] * ((h >> (16 * k)) & 0xffff) / 0x10000);
    snprintf(buf, cap, "rgb(%d,%d,%d)", c[0], c[1], c[2]);
}

/* "12.3 ms", "1.50 GiB", "12 allocations". */
static void ana_svg_amount(int metric, uint64_t v, char *buf, size_t cap)
{
    if (metric == ANA_FLAME_GPU_TIME)
        ana_fmt_ns(v, buf, cap);
    else if (metric == ANA_FLAME_ALLOC_COUNT)
        snprintf(buf, cap, "%llu allocation%s", (unsigned long long)v, v == 1 ? "" : "s");
    else
        ana_fmt_bytes(v, buf, cap);
}

/* The tooltip: "name (12.3 ms, 45.10%)", or for a merged flame
 * "name (base 1.00 MiB, head 1.50 MiB, +50.00%)". */
static void ana_svg_title(const ana_flame *f, const ana_flame_node *n, FILE *out)
{
    char a[48], b[48];
    fputs("<title>", out);
    ana_svg_text(f->names[n->name], strlen(f->names[n->name]), out);
    ana_svg_amount(f->metric, n->total, a, sizeof(a));
    if (f->diff) {
        ana_svg_amount(f->metric, n->base_total, b, sizeof(b));
        fprintf(out, " (base %s, head %s", b, a);
        if (n->base_total)
            fprintf(out, ", %+.2f%%)", 100.0 * ((double)n->total - (double)n->base_total) /
                                           (double)n->base_total);
        else
            fputs(", new)", out);
    } else {
        fprintf(out, " (%s, %.2f%%)", a, f->total ? 100.0 * (double)n->total / (double)f->total : 0);
    }
    fputs("</title>", out);
}

typedef struct ana_svg_layout {
    uint64_t *off;   /* value units from the left edge */
    uint32_t *depth;
    uint64_t grand;  /* the width in value units */
    int use_base;    /* widths from base_total */
    uint32_t max_depth;
    int height;
} ana_svg_layout;

static uint64_t ana_svg_value(const ana_svg_layout *l, const ana_flame_node *n)
{
    return l->use_base ? n->base_total : n->total;
}

static int ana_svg_drawn(const ana_svg_layout *l, const ana_flame_node *n)
{
    uint64_t v = ana_svg_value(l, n);
    return v && (double)v * ANA_SVG_MIN_DIV >= (double)l->grand;
}

static void ana_svg_layout_make(const ana_flame *f, ana_svg_layout *l)
{
    size_t n = f->n_nodes;
    uint64_t *next = ana_xcalloc(n + 1, sizeof(uint64_t));
    l->off = ana_xcalloc(n + 1, sizeof(uint64_t));
    l->depth = ana_xcalloc(n + 1, sizeof(uint32_t));
    l->use_base = f->diff && f->total == 0;
    l->grand = l->use_base ? f->base_total : f->total;
    l->max_depth = 0;
    for (size_t i = 1; i < n; i++) { /* preorder: a parent before its children, in order */
        const ana_flame_node *nd = &f->nodes[i];
        l->off[i] = next[nd->parent];
        next[i] = l->off[i];
        next[nd->parent] += ana_svg_value(l, nd);
        l->depth[i] = l->depth[nd->parent] + 1;
        if (ana_svg_drawn(l, nd) && l->depth[i] > l->max_depth)
            l->max_depth = l->depth[i];
    }
    free(next);
    l->height = ANA_SVG_TOP + (int)(l->max_depth + 1) * ANA_SVG_FRAME_H + ANA_SVG_BOTTOM;
}

static void ana_svg_frames(const ana_flame *f, const ana_svg_layout *l, FILE *out)
{
    uint8_t *leaf_child = ana_xcalloc(f->n_nodes + 1, 1), *has_child = ana_xcalloc(f->n_nodes + 1, 1);
    double scale = (double)(ANA_SVG_WIDTH - 2 * ANA_SVG_PAD) / (double)l->grand;
    char color[40];
    for (size_t i = 1; i < f->n_nodes; i++)
        has_child[f->nodes[i].parent] = 1;
    for (size_t i = 1; i < f->n_nodes; i++)
        if (!has_child[i])
            leaf_child[f->nodes[i].parent] = 1;
    for (size_t i = 0; i < f->n_nodes; i++) {
        const ana_flame_node *n = &f->nodes[i];
        if (!ana_svg_drawn(l, n))
            continue;
        double x = ANA_SVG_PAD + (double)l->off[i] * scale, w = (double)ana_svg_value(l, n) * scale;
        int y = l->height - ANA_SVG_BOTTOM - (int)(l->depth[i] + 1) * ANA_SVG_FRAME_H;
        ana_svg_color(f, i, ana_svg_palette(f, i, leaf_child, !has_child[i]), color, sizeof(color));
        fprintf(out, "<g class=\"f\" data-o=\"%llu\" data-v=\"%llu\" data-d=\"%u\">",
                (unsigned long long)l->off[i], (unsigned long long)ana_svg_value(l, n), l->depth[i]);
        ana_svg_title(f, n, out);
        fprintf(out, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" rx=\"2\"/>"
                "<text x=\"%.2f\" y=\"%d\">", x, y, w, ANA_SVG_FRAME_H - 1, color, x + 3, y + 11);
        ana_svg_label(f->names[n->name], w, out);
        fputs("</text></g>\n", out);
    }
    free(leaf_child);
    free(has_child);
}

/* Hover: the details line; click: zoom to a frame (its ancestors span the width, what is
 * not above it hides); "Reset Zoom"; Ctrl-F or "Search": a regular expression, matches
 * in magenta and the share of the total they cover (nested matches counted once). */
static const char ana_svg_script[] =
    "<script type=\"text/ecmascript\"><![CDATA[\n"
    "(function(){'use strict';\n"
    "var svg=document.getElementById('anatomist-flame'),W=1200,P=10,CW=7;\n"
    "var total=+svg.getAttribute('data-total'),frames=[].slice.call(svg.querySelectorAll('g.f'));\n"
    "function q(id){return svg.querySelector('#'+id);}\n"
    "var idle=q('details').textContent;\n"
    "function a(g,n){return +g.getAttribute(n);}\n"
    "function nm(g){return g.querySelector('title').textContent.replace(/ \\([^(]*\\)$/,'');}\n"
    "function fit(g,w){var s=nm(g),n=Math.floor((w-6)/CW);var t=g.querySelector('text');\n"
    " t.textContent=w<2*CW||n<3?'':s.length<=n?s:s.slice(0,n-2)+'..';}\n"
    "function place(g,x,w){var r=g.querySelector('rect');r.setAttribute('x',x.toFixed(2));\n"
    " r.setAttribute('width',w.toFixed(2));g.querySelector('text').setAttribute('x',(x+3).toFixed(2));\n"
    " g.style.display='';fit(g,w);}\n"
    "function zoom(z){var o=a(z,'data-o'),v=a(z,'data-v'),d=a(z,'data-d'),s=(W-2*P)/v;\n"
    " frames.forEach(function(g){var go=a(g,'data-o'),gv=a(g,'data-v'),gd=a(g,'data-d');\n"
    "  if(gd<d&&go<=o&&go+gv>=o+v){place(g,P,W-2*P);g.style.opacity='0.6';}\n"
    "  else if(gd>=d&&go>=o&&go<o+v){place(g,P+(go-o)*s,gv*s);g.style.opacity='';}\n"
    "  else g.style.display='none';});\n"
    " q('unzoom').style.display='';}\n"
    "function unzoom(){var s=(W-2*P)/total;frames.forEach(function(g){\n"
    " place(g,P+a(g,'data-o')*s,a(g,'data-v')*s);g.style.opacity='';});\n"
    " q('unzoom').style.display='none';}\n"
    "function clear(){frames.forEach(function(g){var r=g.querySelector('rect');\n"
    " if(r.getAttribute('data-c')){r.setAttribute('fill',r.getAttribute('data-c'));\n"
    " r.removeAttribute('data-c');}});q('matched').textContent='';q('search').textContent='Search';}\n"
    "function search(){var term=window.prompt('Search for (a regular expression):','');\n"
    " clear();if(!term)return;var re;try{re=new RegExp(term);}catch(e){return;}\n"
    " var iv=[];frames.forEach(function(g){if(!re.test(nm(g)))return;var r=g.querySelector('rect');\n"
    "  r.setAttribute('data-c',r.getAttribute('fill'));r.setAttribute('fill','rgb(230,0,230)');\n"
    "  iv.push([a(g,'data-o'),a(g,'data-o')+a(g,'data-v')]);});\n"
    " iv.sort(function(x,y){return x[0]-y[0];});var sum=0,end=-1;\n"
    " iv.forEach(function(x){if(x[0]>=end){sum+=x[1]-x[0];end=x[1];}\n"
    "  else if(x[1]>end){sum+=x[1]-end;end=x[1];}});\n"
    " q('matched').textContent='Matched: '+(total?100*sum/total:0).toFixed(2)+'%';\n"
    " q('search').textContent='Reset Search';}\n"
    "svg.addEventListener('mouseover',function(e){var g=e.target.closest('g.f');\n"
    " if(g)q('details').textContent=g.querySelector('title').textContent;});\n"
    "svg.addEventListener('mouseout',function(){q('details').textContent=idle;});\n"
    "svg.addEventListener('click',function(e){var t=e.target;\n"
    " if(t.id==='unzoom')return unzoom();\n"
    " if(t.id==='search')return q('matched').textContent?clear():search();\n"
    " var g=t.closest('g.f');if(g)zoom(g);});\n"
    "window.addEventListener('keydown',function(e){if((e.ctrlKey||e.metaKey)&&e.key==='f'){\n"
    " e.preventDefault();search();}});\n"
    "})();\n"
    "]]></script>\n";

void ana_flame_write_svg(const ana_flame *f, FILE *out, const char *title)
{
    ana_svg_layout l;
    char buf[48];
    ana_svg_layout_make(f, &l);
    fprintf(out, "<svg version=\"1.1\" id=\"anatomist-flame\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" xmlns=\"http://www.w3.org/2000/svg\" data-metric=\"%s\" "
            "data-unit=\"%s\" data-total=\"%llu\">\n", ANA_SVG_WIDTH, l.height, ANA_SVG_WIDTH,
            l.height, ana_flame_metric_name(f->metric), ana_flame_metric_unit(f->metric),
            (unsigned long long)l.grand);
    fputs("<style>text{font-family:Verdana,sans-serif;font-size:12px;fill:#000}"
          "g.f:hover rect{stroke:#000;stroke-width:0.5}g.f{cursor:pointer}"
          "#title{font-size:17px}#unzoom,#search{cursor:pointer;fill:#225}</style>\n", out);
    fprintf(out, "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f8f8f4\"/>\n"
            "<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">", ANA_SVG_WIDTH / 2);
    if (title)
        ana_svg_text(title, strlen(title), out);
    else
        fprintf(out, "Flame graph: %s", ana_flame_metric_name(f->metric));
    fprintf(out, "</text>\n<text id=\"unzoom\" x=\"%d\" y=\"24\" style=\"display:none\">Reset Zoom"
            "</text>\n<text id=\"search\" x=\"%d\" y=\"24\" text-anchor=\"end\">Search</text>\n"
            "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"></text>\n",
            ANA_SVG_PAD, ANA_SVG_WIDTH - ANA_SVG_PAD, ANA_SVG_WIDTH - ANA_SVG_PAD, l.height - 12);
    ana_svg_amount(f->metric, l.grand, buf, sizeof(buf));
    fprintf(out, "<text id=\"details\" x=\"%d\" y=\"%d\">%s in all%s</text>\n", ANA_SVG_PAD,
            l.height - 12, buf, l.grand ? "" : ": nothing to draw");
    if (l.grand)
        ana_svg_frames(f, &l, out);
    fputs(ana_svg_script, out);
    fputs("</svg>\n", out);
    free(l.off);
    free(l.depth);
}
