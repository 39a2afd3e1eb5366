// A worker of the HTTP server: one thread running one io_context. A connection lives on one worker
// from accept to close, so its state needs no lock and no strand. Also the Asio types of the
// objects bound to a worker's executor (sockets, the acceptor, timers), shared by the server and
// its connections.
//
// Ownership: the Server owns its workers (http_server_impl.h); a worker's thread is started and
// joined by the Server.
#pragma once

#include <boost/asio/basic_socket_acceptor.hpp>
#include <boost/asio/basic_stream_socket.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <thread>

namespace spillway::server {

using Executor = boost::asio::io_context::executor_type;
using Socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, Executor>;
using Acceptor = boost::asio::basic_socket_acceptor<boost::asio::ip::tcp, Executor>;
using Timer = boost::asio::basic_waitable_timer<
    std::chrono::steady_clock, boost::asio::wait_traits<std::chrono::steady_clock>, Executor>;

struct Worker {
  boost::asio::io_context ioc{1};  // run by one thread
  boost::asio::executor_work_guard<Executor> work{ioc.get_executor()};
  std::thread thread;
  std::thread::id thread_id;  // set by run() before the first accept is posted
};

}  // namespace spillway::server
