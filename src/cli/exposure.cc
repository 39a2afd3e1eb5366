// serve's and validate's exposure warnings (see exposure.h).
#include "src/cli/exposure.h"

#include <sys/stat.h>

#include <boost/asio/ip/address.hpp>
#include <cstdio>

namespace spillway::cli {

bool is_loopback_host(std::string_view host) {
  if (host == "localhost") return true;
  boost::system::error_code ec;
  const boost::asio::ip::address address = boost::asio::ip::make_address(host, ec);
  if (ec) return false;
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, address.to_v6())
        .is_loopback();
  }
  return address.is_loopback();
}

std::optional<std::string> exposed_secret_file(const std::string& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0 || !S_ISREG(status.st_mode)) return std::nullopt;
  const mode_t mode = status.st_mode;
  const bool group = (mode & (S_IRGRP | S_IWGRP)) != 0;
  const bool others = (mode & (S_IROTH | S_IWOTH)) != 0;
  if (!group && !others) return std::nullopt;
  char octal[8];
  std::snprintf(octal, sizeof(octal), "%04o", static_cast<unsigned>(mode & 07777));
  const bool writable = (mode & (S_IWGRP | S_IWOTH)) != 0;
  return std::string("mode ") + octal + ": " +
         (group && others ? "group and others"
          : group         ? "its group"
                          : "others") +
         " can " + (writable ? "read or write" : "read") + " it (chmod 600 " + path + ")";
}

}  // namespace spillway::cli
