// graph/graph.cpp — building, reading and transforming graphs (ember/graph.h).
#include "ember/graph.h"

#include <algorithm>
#include <set>

#include "ops/registry.h"

namespace ember {

std::string SourceLoc::str() const { return known() ? file + ":" + std::to_string(line) : "<unknown>"; }

Arg Arg::of_literal(IValue v) {
  Arg a;
  a.kind = Kind::Literal;
  a.literal = std::move(v);
  return a;
}

Arg Arg::of_value(ValueRef v) {
  Arg a;
  a.kind = Kind::Value;
  a.value = v;
  return a;
}

Arg Arg::of_values(std::vector<std::optional<ValueRef>> vs) {
  Arg a;
  a.kind = Kind::ValueList;
  a.values = std::move(vs);
  return a;
}

bool Node::is_impure() const {
  if (kind_ != NodeKind::Call) return kind_ == NodeKind::Output;
  return op_->nondeterministic_seeded || op_->schema.is_mutable();
}

namespace {

/// "aten::add.Tensor" -> "add"; names of values are identifiers.
std::string name_hint_of(std::string_view text) {
  if (auto p = text.find("::"); p != std::string_view::npos) text.remove_prefix(p + 2);
  if (auto p = text.find('.'); p != std::string_view::npos) text = text.substr(0, p);
  std::string out;
  for (char c : text) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out.insert(out.begin(), '_');
  return out;
}

/// "fc1.weight" -> "fc1_weight": a dotted input name keeps all its parts (name_hint_of
/// would cut it at the first '.', as it does an op's overload).
std::string dotted_hint(std::string_view name) {
  std::string out(name);
  std::replace(out.begin(), out.end(), '.', '_');
  return out;
}

template <typename F>
void for_each_ref(const Node& n, F&& f) {
  for (const Arg& a : n.args()) {
    if (a.kind == Arg::Kind::Value) f(a.value);
    if (a.kind == Arg::Kind::ValueList) {
      for (const auto& v : a.values)
        if (v) f(*v);
    }
  }
}

}  // namespace

void Graph::reserve_names(std::vector<std::string> names) {
  for (std::string& n : names) reserved_.insert(std::move(n));
}

std::string Graph::unique_name(std::string_view hint) {
  std::string base = name_hint_of(hint);
  if (!name_counts_.contains(base) && !reserved_.contains(base)) {
    name_counts_.emplace(base, 0);
    return base;
  }
  // The suffix counter lives with the base name once taken, or with the reservation.
  int& count = name_counts_.contains(base) ? name_counts_.find(base)->second : reserved_counts_[base];
  for (;;) {
    std::string candidate = base + "_" + std::to_string(++count);
    if (!name_counts_.contains(candidate) && !reserved_.contains(candidate)) {
      name_counts_.emplace(candidate, 0);
      return candidate;
    }
  }
}

Node* Graph::append(std::unique_ptr<Node> node) {
  EMBER_CHECK(output_node() == nullptr || node->kind() == NodeKind::Output)
      << "graph " << name_ << ": cannot add node " << node->name() << " after the output node";
  nodes_.push_back(std::move(node));
  return nodes_.back().get();
}

Node* Graph::add_placeholder(std::string_view input_name, TensorMeta meta) {
  auto n = std::make_unique<Node>();
  n->kind_ = NodeKind::Placeholder;
  n->name_ = unique_name(dotted_hint(input_name));
  n->target_ = std::string(input_name);
  n->meta_.push_back(std::move(meta));
  return append(std::move(n));
}

Node* Graph::add_attribute(std::string_view qualified_name, TensorMeta meta) {
  auto n = std::make_unique<Node>();
  n->kind_ = NodeKind::Attribute;
  n->name_ = unique_name(dotted_hint(qualified_name));
  n->target_ = std::string(qualified_name);
  n->meta_.push_back(std::move(meta));
  return append(std::move(n));
}

Node* Graph::add_constant(std::string_view name_hint, Tensor value) {
  auto n = std::make_unique<Node>();
  n->kind_ = NodeKind::Constant;
  n->name_ = unique_name(dotted_hint(name_hint));
  n->target_ = n->name_;
  n->meta_.push_back(TensorMeta{value.sizes().vec(), value.strides().vec(), value.dtype(), value.device(),
                                value.storage_offset()});
  constants_[n->target_] = std::move(value);
  return append(std::move(n));
}

Node* Graph::add_call(const ops::OpDef& op, std::vector<Arg> args, std::vector<TensorMeta> meta, SourceLoc loc) {
  EMBER_INTERNAL_ASSERT(args.size() == op.schema.arguments.size())
      << op.name << ": " << args.size() << " arguments for a schema of " << op.schema.arguments.size();
  auto n = std::make_unique<Node>();
  n->kind_ = NodeKind::Call;
  n->name_ = unique_name(op.name);
  n->target_ = op.name;
  n->op_ = &op;
  n->args_ = std::move(args);
  n->meta_ = std::move(meta);
  n->loc_ = std::move(loc);
  return append(std::move(n));
}

Node* Graph::set_output(std::vector<ValueRef> outputs) {
  if (Node* old = output_node()) {
    name_counts_.erase(old->name_);
    nodes_.pop_back();
  }
  auto n = std::make_unique<Node>();
  n->kind_ = NodeKind::Output;
  n->name_ = unique_name("output");
  n->target_ = "output";
  for (ValueRef v : outputs) n->args_.push_back(Arg::of_value(v));
  return append(std::move(n));
}

Node* Graph::add_named(NodeKind kind, std::string name, std::string target, const ops::OpDef* op,
                       std::vector<Arg> args, std::vector<TensorMeta> meta, SourceLoc loc, bool grad_enabled) {
  EMBER_CHECK_VALUE(!name_counts_.contains(name)) << "graph " << name_ << ": the name %" << name << " is used twice";
  name_counts_.emplace(name, 0);
  auto n = std::make_unique<Node>();
  n->kind_ = kind;
  n->name_ = std::move(name);
  n->target_ = std::move(target);
  n->op_ = op;
  n->args_ = std::move(args);
  n->meta_ = std::move(meta);
  n->loc_ = std::move(loc);
  n->grad_enabled_ = grad_enabled;
  return append(std::move(n));
}

std::vector<Node*> Graph::inputs() const {
  std::vector<Node*> out;
  for (const auto& n : nodes_) {
    if (n->kind() == NodeKind::Placeholder || n->kind() == NodeKind::Attribute) out.push_back(n.get());
  }
  return out;
}

Node* Graph::output_node() const {
  return !nodes_.empty() && nodes_.back()->kind() == NodeKind::Output ? nodes_.back().get() : nullptr;
}

std::vector<ValueRef> Graph::outputs() const {
  std::vector<ValueRef> out;
  if (Node* o = output_node()) {
    for (const Arg& a : o->args()) out.push_back(a.value);
  }
  return out;
}

size_t Graph::op_count() const {
  return static_cast<size_t>(std::count_if(nodes_.begin(), nodes_.end(),
                                           [](const auto& n) { return n->kind() == NodeKind::Call; }));
}

Node* Graph::find(std::string_view node_name) const {
  for (const auto& n : nodes_)
    if (n->name() == node_name) return n.get();
  return nullptr;
}

std::map<const Node*, std::vector<Node*>> Graph::users() const {
  std::map<const Node*, std::vector<Node*>> out;
  for (const auto& n : nodes_) out[n.get()];
  for (const auto& n : nodes_) {
    std::set<const Node*> seen;
    for_each_ref(*n, [&](ValueRef v) {
      if (seen.insert(v.node).second) out[v.node].push_back(n.get());
    });
  }
  return out;
}

size_t Graph::eliminate_dead_code() {
  // One backward sweep suffices: a node's users all come after it.
  std::set<const Node*> live;
  std::vector<Node*> dead;
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
    Node* n = it->get();
    const bool keep = n->kind() != NodeKind::Call || n->is_impure() || live.contains(n);
    if (!keep) {
      dead.push_back(n);
      continue;
    }
    for_each_ref(*n, [&](ValueRef v) { live.insert(v.node); });
  }
  if (dead.empty()) return 0;
  std::set<const Node*> dead_set(dead.begin(), dead.end());
  std::erase_if(nodes_, [&](const auto& n) {
    if (!dead_set.contains(n.get())) return false;
    name_counts_.erase(n->name());
    return true;
  });
  return dead.size();
}

void Graph::erase(Node* node) {
  auto users_of = users();
  EMBER_CHECK(users_of[node].empty()) << "graph " << name_ << ": cannot erase %" << node->name() << ", %"
                                      << users_of[node].front()->name() << " uses it";
  name_counts_.erase(node->name());
  std::erase_if(nodes_, [&](const auto& n) { return n.get() == node; });
}

std::unique_ptr<Graph> Graph::clone() const {
  auto g = std::make_unique<Graph>(name_);
  std::map<const Node*, Node*> map;
  auto remap = [&](ValueRef v) { return ValueRef{map.at(v.node), v.index}; };
  for (const auto& n : nodes_) {
    std::vector<Arg> args = n->args();
    for (Arg& a : args) {
      if (a.kind == Arg::Kind::Value) a.value = remap(a.value);
      for (auto& v : a.values)
        if (v) v = remap(*v);
    }
    map[n.get()] = g->add_named(n->kind(), n->name(), n->target(), n->op(), std::move(args), n->meta(), n->loc(),
                                n->grad_enabled());
  }
  g->constants_ = constants_;
  g->name_counts_ = name_counts_;
  g->reserved_ = reserved_;
  g->reserved_counts_ = reserved_counts_;
  return g;
}

std::ostream& operator<<(std::ostream& os, const Graph& g) { return os << to_string(g); }

}  // namespace ember
