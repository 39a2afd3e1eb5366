#include "src/server/request_reader.h"

#include <algorithm>
#include <boost/beast/http/error.hpp>
#include <cstdint>
#include <iterator>

#include "src/core/text.h"

namespace spillway::server {

namespace http = boost::beast::http;

RequestReader::RequestReader(std::size_t max_header_bytes, std::size_t max_body_bytes)
    : max_header_bytes_(max_header_bytes), max_body_bytes_(max_body_bytes) {
  start_next();
}

boost::asio::mutable_buffer RequestReader::prepare(std::size_t bytes) {
  return buffer_.prepare(bytes);
}

void RequestReader::commit(std::size_t bytes) { buffer_.commit(bytes); }

void RequestReader::start_next() {
  parser_.emplace();
  parser_->eager(true);  // parse the body in the same call as the header when it has arrived
  parser_->body_limit(max_body_bytes_);
  parser_->header_limit(
      static_cast<std::uint32_t>(std::min<std::size_t>(max_header_bytes_, UINT32_MAX)));
  continue_checked_ = false;
  header_offered_ = false;
  line_known_ = false;
  state_ = State::kNeedMore;
  method_ = "-";
  path_ = "-";
}

void RequestReader::remember_request_line(bool failed) {
  // Known once the whole header is (so "method known" means "header complete"), or when parsing
  // failed after Beast had read the request line (e.g. a Content-Length over the body limit).
  if (line_known_ || (!failed && !parser_->is_header_done())) return;
  const auto& request = parser_->get();
  const std::string_view method = request.method_string();
  if (method.empty()) return;
  line_known_ = true;
  const std::string_view target = request.target();
  method_ = std::string(method);
  if (!target.empty()) path_ = std::string(target_path(target));
}

RequestReader::State RequestReader::parse() {
  if (state_ != State::kNeedMore) return state_;
  while (!parser_->is_done()) {
    if (buffer_.size() == 0) return state_;
    boost::system::error_code ec;
    const std::size_t used = parser_->put(buffer_.data(), ec);
    buffer_.consume(used);
    remember_request_line(ec && ec != http::error::need_more);
    if (ec == http::error::need_more) return state_;
    if (ec) {
      state_ = State::kError;
      if (ec == http::error::body_limit) {
        error_status_ = 413;
        error_message_ =
            "request body is larger than " + std::to_string(max_body_bytes_) + " bytes";
      } else if (ec == http::error::header_limit) {
        error_status_ = 431;
        error_message_ =
            "request headers are larger than " + std::to_string(max_header_bytes_) + " bytes";
      } else {
        error_status_ = 400;
        error_message_ = "malformed request: " + ec.message();
      }
      return state_;
    }
    if (used == 0) return state_;  // nothing consumed without an error: wait for more bytes
  }
  state_ = State::kComplete;
  return state_;
}

bool RequestReader::take_continue_request() {
  if (continue_checked_ || state_ != State::kNeedMore || !parser_->is_header_done()) return false;
  continue_checked_ = true;
  const auto& request = parser_->get();
  return request.version() >= 11 && ascii_iequals(request[http::field::expect], "100-continue");
}

std::optional<HttpRequest> RequestReader::take_header_only() {
  if (header_offered_ || state_ != State::kNeedMore || !parser_->is_header_done()) {
    return std::nullopt;
  }
  header_offered_ = true;
  const auto& message = parser_->get();
  HttpRequest request;
  request.method = std::string(message.method_string());
  request.target = std::string(message.target());
  for (const auto& field : message.base()) {
    std::string name(field.name_string());
    for (char& c : name) c = ascii_lower(c);
    request.headers.emplace_back(std::move(name), std::string(field.value()));
  }
  return request;
}

ReadRequest RequestReader::take() {
  auto& message = parser_->get();
  ReadRequest out;
  out.keep_alive = message.keep_alive();
  out.http10 = message.version() < 11;
  out.head = message.method() == http::verb::head;
  HttpRequest& request = out.request;
  request.method = std::string(message.method_string());
  request.target = std::string(message.target());
  request.headers.reserve(
      static_cast<std::size_t>(std::distance(message.base().begin(), message.base().end())));
  for (const auto& field : message.base()) {
    std::string name(field.name_string());
    for (char& c : name) c = ascii_lower(c);
    request.headers.emplace_back(std::move(name), std::string(field.value()));
  }
  request.body = std::move(message.body());
  start_next();  // pipelined bytes already received stay in the buffer
  return out;
}

}  // namespace spillway::server
