// The models a server offers, by name, and whether it is ready: every model is loaded before the
// server listens, so it is ready from then until it starts draining.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "serve/served_model.h"

namespace infer::serve {

class Repository {
 public:
  // Before serving starts only (the list is not locked).
  void add(std::unique_ptr<ServedModel> model) { models_.push_back(std::move(model)); }

  ServedModel* find(const std::string& name) const {
    for (const auto& m : models_) {
      if (m->name() == name) return m.get();
    }
    return nullptr;
  }
  const std::vector<std::unique_ptr<ServedModel>>& models() const { return models_; }

  bool ready() const { return !draining_.load(); }
  void set_draining() { draining_.store(true); }

 private:
  std::vector<std::unique_ptr<ServedModel>> models_;
  std::atomic<bool> draining_{false};
};

}  // namespace infer::serve
