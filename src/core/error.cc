#include "spillway/error.h"

namespace spillway {

std::string_view errc_name(Errc code) {
  switch (code) {
    case Errc::kInvalidArgument:
      return "invalid_argument";
    case Errc::kStoreFull:
      return "store_full";
    case Errc::kUnavailable:
      return "unavailable";
    case Errc::kTimeout:
      return "timeout";
    case Errc::kInternal:
      return "internal";
    case Errc::kNotFound:
      return "not_found";
    case Errc::kConflict:
      return "conflict";
  }
  return "unknown";
}

}  // namespace spillway
