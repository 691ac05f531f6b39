#include "host/engine/metric_fetcher.h"

#include "host/engine/metric_provider.h"

namespace tide::engine {

MetricFetcher::MetricFetcher(model::MetricProviders providers, MetricFetcherOptions options, Fetch fetch)
    : providers_(std::move(providers)), options_(options), fetch_(fetch ? std::move(fetch) : Fetch(fetchMetric)) {}

MetricFetcher::~MetricFetcher() { stop(); }

void MetricFetcher::onAnswer(std::function<void()> callback) {
  std::lock_guard<std::mutex> lock(mu_);
  on_answer_ = std::move(callback);
}

int MetricFetcher::request(const std::vector<model::MetricQuery>& queries) {
  std::lock_guard<std::mutex> lock(mu_);
  const Steady::time_point now = Steady::now();
  int queued = 0;
  for (const model::MetricQuery& query : queries) {
    Entry& entry = entries_[query];
    entry.asked_at = now;
    if (entry.queued || (entry.answered_at && now - *entry.answered_at < options_.refresh_after)) continue;
    entry.queued = true;
    queue_.push_back(query);
    ++queued;
  }
  for (auto it = entries_.begin(); it != entries_.end();) {
    const bool forgotten = !it->second.queued && now - it->second.asked_at > options_.forget_after;
    it = forgotten ? entries_.erase(it) : std::next(it);
  }
  if (queued > 0) {
    if (!thread_.joinable()) {
      stopping_ = false;
      thread_ = std::thread([this] { run(); });
    }
    wake_.notify_one();
  }
  return queued;
}

nlohmann::json MetricFetcher::answers() const {
  nlohmann::json out = nlohmann::json::object();
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [query, entry] : entries_) {
    if (!entry.answered_at) continue;
    nlohmann::json& provider = out[query.provider];
    provider[query.key()] = entry.value ? nlohmann::json(*entry.value) : nlohmann::json(entry.reason);
  }
  return out;
}

void MetricFetcher::stop() {
  std::thread thread;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (const auto& query : queue_) entries_[query].queued = false;
    queue_.clear();
    thread = std::move(thread_);
  }
  wake_.notify_all();
  if (thread.joinable()) thread.join();
}

uint64_t MetricFetcher::fetches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fetches_;
}

bool MetricFetcher::idle() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.empty() && running_ == 0;
}

Result<double> MetricFetcher::ask(const model::MetricQuery& query) const {
  auto provider = providers_.find(query.provider);
  if (provider == providers_.end()) {
    std::string known;
    for (const auto& [name, _] : providers_) known += (known.empty() ? "" : ", ") + name;
    return Status::notFound("no such metric provider (the host config declares " +
                            (known.empty() ? "none" : known) + ")");
  }
  return fetch_(provider->second, query);
}

void MetricFetcher::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    const model::MetricQuery query = queue_.front();
    queue_.pop_front();
    ++running_;
    ++fetches_;
    lock.unlock();
    Result<double> answer = ask(query);
    lock.lock();
    --running_;
    auto it = entries_.find(query);
    if (it == entries_.end()) continue;  // forgotten meanwhile
    Entry& entry = it->second;
    entry.queued = false;
    entry.answered_at = Steady::now();
    entry.value = answer.isOk() ? std::optional<double>(*answer) : std::nullopt;
    entry.reason = answer.isOk() ? "" : query.provider + ": " + answer.status().message();
    const std::function<void()> callback = on_answer_;
    lock.unlock();
    if (callback) callback();
    lock.lock();
  }
}

}  // namespace tide::engine
