# Generates OUTPUT (a .cc file) holding web assets as strings, for the pages spillway serves and
# writes (src/pages/assets.h declares them). ASSETS is a list of NAME=PATH pairs: each file becomes
# `const std::string_view NAME` in namespace spillway::pages::assets, as a raw string literal.
# A file that contains the raw string's closing delimiter is an error (it would end the string).
set(delimiter "spillway_asset")
set(out "// Generated from web assets by cmake/embed_assets.cmake; edit the sources, not this.\n")
string(APPEND out "#include \"src/pages/assets.h\"\n\nnamespace spillway::pages::assets {\n")
foreach(pair IN LISTS ASSETS)
  string(FIND "${pair}" "=" at)
  string(SUBSTRING "${pair}" 0 ${at} name)
  math(EXPR from "${at} + 1")
  string(SUBSTRING "${pair}" ${from} -1 path)
  if(NOT EXISTS "${path}")
    message(FATAL_ERROR "web asset ${name}: ${path} is missing (scripts/setup.sh installs "
                        "third_party/uplot with npm ci)")
  endif()
  file(READ "${path}" text)
  string(FIND "${text}" ")${delimiter}\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "web asset ${name}: ${path} contains the delimiter )${delimiter}\"")
  endif()
  string(APPEND out "\nconst std::string_view ${name} = R\"${delimiter}(${text})${delimiter}\";\n")
endforeach()
string(APPEND out "\n}  // namespace spillway::pages::assets\n")
file(WRITE "${OUTPUT}.new" "${out}")
file(COPY_FILE "${OUTPUT}.new" "${OUTPUT}" ONLY_IF_DIFFERENT)
