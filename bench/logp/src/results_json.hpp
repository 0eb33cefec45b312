// results_json.hpp - the Report <-> JSON mapping (schema "viastack-logp/1").
#pragma once

#include "results.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace logp {

// The measurements only: every key of the schema but "tables".
nlohmann::json to_json(const Report &r);
// The document written to files: to_json plus "tables", the report's tables
// as the terminal and report.md show them (render_json of tables.hpp's model).
nlohmann::json report_json(const Report &r);
// Reads a document written by to_json (missing keys keep their defaults,
// null numbers become NaN).  Throws std::runtime_error naming the problem when
// the document is not a viastack-logp/1 report.
Report report_from_json(const nlohmann::json &j);

// Writes report_json(r) to path (pretty-printed); throws std::runtime_error on failure.
void write_json_file(const Report &r, const std::string &path);
Report read_json_file(const std::string &path);

} // namespace logp
