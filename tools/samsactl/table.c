/* samsactl's tables: see table.h. */
#include "table.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

void table_init(struct table *t, int ncols, const char *const *header)
{
    memset(t, 0, sizeof *t);
    t->ncols = ncols;
    t->cells = xmalloc((size_t)ncols * sizeof *t->cells);
    t->cap = 1;
    memcpy(t->cells, header, (size_t)ncols * sizeof *t->cells);
    t->nrows = 1;
}

void table_row(struct table *t, const char *const *cells)
{
    if (t->nrows == t->cap) {
        t->cap *= 2;
        t->cells = xrealloc(t->cells, (size_t)t->cap * (size_t)t->ncols * sizeof *t->cells);
    }
    memcpy(t->cells + (size_t)t->nrows * (size_t)t->ncols, cells, (size_t)t->ncols * sizeof *t->cells);
    t->nrows++;
}

void table_print(const struct table *t)
{
    size_t *w = xcalloc((size_t)t->ncols, sizeof *w);
    for (int r = 0; r < t->nrows; r++)
        for (int c = 0; c < t->ncols; c++) {
            size_t len = strlen(t->cells[r * t->ncols + c]);
            if (len > w[c])
                w[c] = len;
        }
    for (int r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            const char *s = t->cells[r * t->ncols + c];
            if (c == t->ncols - 1)
                printf("%s\n", s);
            else
                printf("%-*s ", (int)w[c], s);
        }
    }
    free(w);
}

void table_free(struct table *t)
{
    free(t->cells);
    memset(t, 0, sizeof *t);
}

const char *table_cellf(struct arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = arena_alloc(a, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}
