/* export_sqlite_schema.h — the SQL that makes the SQLite export's tables (before its rows)
 * and its indexes and views (after them): export_sqlite.c runs it. A change of a table is
 * a new ANA_SQ_SCHEMA_VERSION (meta.schema_version) and a line in docs/export.md.
 * Part of views/. */
#ifndef ANA_EXPORT_SQLITE_SCHEMA_H
#define ANA_EXPORT_SQLITE_SCHEMA_H

#define ANA_SQ_SCHEMA_VERSION 1

extern const char ana_sq_schema[];
extern const char ana_sq_views[];

#endif
