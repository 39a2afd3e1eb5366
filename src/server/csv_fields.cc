#include "src/server/csv_fields.h"

namespace spillway::server {

Result<std::vector<std::string>> csv_fields(std::string_view line) {
  std::vector<std::string> fields;
  std::size_t at = 0;
  while (true) {
    std::string field;
    if (at < line.size() && line[at] == '"') {
      const std::size_t opened = at;
      ++at;
      while (true) {
        if (at >= line.size()) {
          return invalid_argument("the quoted field that starts at byte " +
                                  std::to_string(opened + 1) +
                                  " is not closed on its line (a '\"' inside a quoted field is "
                                  "written \"\")");
        }
        if (line[at] == '"') {
          if (at + 1 < line.size() && line[at + 1] == '"') {  // "" is one '"'
            field += '"';
            at += 2;
            continue;
          }
          ++at;
          break;
        }
        field += line[at++];
      }
      if (at < line.size() && line[at] != ',') {
        return invalid_argument("byte " + std::to_string(at + 1) +
                                ": after a quoted field comes ',' or the end of the line");
      }
    } else {
      const std::size_t end = line.find(',', at);
      const std::string_view bare =
          line.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
      if (const std::size_t quote = bare.find('"'); quote != std::string_view::npos) {
        return invalid_argument("byte " + std::to_string(at + quote + 1) +
                                ": a '\"' in a field that is not quoted (quote the whole field: "
                                "\"a\"\"b\" is a\"b)");
      }
      field.assign(bare);
      at += bare.size();
    }
    fields.push_back(std::move(field));
    if (at >= line.size()) return fields;
    ++at;  // the ','
  }
}

}  // namespace spillway::server
