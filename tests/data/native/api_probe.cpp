// A test plugin: gem5's loop on worker 0 (exact), while the API's messages, barrier, hand-off slots and option
// readers are exercised between the workers; what they carried is reported as stats.
#include "tickpar/strategy.hpp"

static const char* const kDeclaration = R"tickpar({
  "name": "api-probe",
  "summary": "test: the sequential loop, plus the API's messages, barrier and slots between the workers",
  "options": {
    "rounds": {"type": "int", "default": 3, "min": 1, "help": "message rounds between the workers"},
    "scale": {"type": "float", "default": 1.5, "help": "a float option, echoed"},
    "flag": {"type": "bool", "default": false, "help": "a bool option, echoed"},
    "label": {"type": "str", "default": "x", "choices": ["x", "yz"], "help": "a str option, echoed by length"}
  },
  "promise": [{"verdict": "exact", "because": "gem5's loop on one thread"}]
})tickpar";

void run_api_probe(tp::Run& r, tp::Result& res, tp::Crew& crew) {
  int P = std::max(1, r.o.workers);
  int64_t rounds = tp::option_int(r.o, "rounds");
  tp::Mailboxes<int64_t> boxes(P);
  tp::SpinBarrier barrier(P);
  std::vector<int64_t> received(size_t(P), 0);
  std::unique_ptr<tp::HandoffSlot[]> slots(new tp::HandoffSlot[size_t(P)]);
  std::vector<int64_t> handed(size_t(P), 0);
  // Every round, worker w sends w + 1 to every worker; after the barrier each adds up what it got.
  auto exchange = [&](int w) {
    for (int64_t k = 0; k < rounds; ++k) {
      for (int to = 0; to < P; ++to) boxes.send(w, to, k, int64_t(w + 1));
      barrier.wait();
      boxes.receive(w, k, [&](int64_t m) { received[size_t(w)] += m; });
      barrier.wait();
    }
    // then one hand-off: worker 0 posts generation 1 to each, which answers with its own number
    if (w > 0) {
      uint64_t g = slots[size_t(w)].wait_posted(0);
      handed[size_t(w)] = int64_t(g) * 100 + w;
      slots[size_t(w)].finish(g);
    }
  };
  if (P > 1) crew.start(exchange);
  auto t0 = tp::Clock::now();
  exchange(0);  // with one worker: its messages to itself
  for (int w = 1; w < P; ++w) slots[size_t(w)].post(1);
  for (int w = 1; w < P; ++w) slots[size_t(w)].wait_finished(1);
  tp::Queue q;
  if (r.init_ops(q)) tp::seq_loop(r, q);
  double loop_s = tp::seconds_since(t0);
  if (P > 1) {
    crew.finish_self();
    crew.join();
  }
  int64_t total = 0, hand = 0;
  for (int w = 0; w < P; ++w) total += received[size_t(w)];
  for (int w = 1; w < P; ++w) hand += handed[size_t(w)];
  tp::add_stat(res, "loop_s", loop_s);
  tp::add_stat(res, "messages_received", double(total));
  tp::add_stat(res, "handed", double(hand));
  tp::add_stat(res, "scale", tp::option_double(r.o, "scale"));
  tp::add_stat(res, "flag", tp::option_bool(r.o, "flag") ? 1.0 : 0.0);
  tp::add_stat(res, "label_length", double(tp::option_text(r.o, "label").size()));
  tp::add_stat_list(res, "received_per_worker", std::vector<double>(received.begin(), received.end()));
  res.cur_tick = q.cur_tick;
}

TICKPAR_NATIVE_STRATEGY(kDeclaration, run_api_probe)
