/* samsactl's tables, printed as Kafka's tools print theirs: columns
 * left-aligned to their widest cell, one space apart, the last one
 * unpadded. */
#ifndef SAMSACTL_TABLE_H
#define SAMSACTL_TABLE_H

#include "util/arena.h"

struct table {
    int ncols;
    const char **cells; /* row-major, row 0 the header; owned (the strings are not) */
    int nrows, cap;
};

/* header: ncols strings that must outlive the table, as every cell. */
void table_init(struct table *t, int ncols, const char *const *header);
/* Appends a row of t->ncols cells (the pointers are copied). */
void table_row(struct table *t, const char *const *cells);
/* Prints the header and rows on stdout. */
void table_print(const struct table *t);
/* A cell printed into arena a (lives as long as a). */
const char *table_cellf(struct arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Frees what the table owns (not the strings). */
void table_free(struct table *t);

#endif
