#include "dra/cel_selector.h"

#include <cctype>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "pod/quantity.h"

namespace devmgr::dra {

// A value of the subset's types.
struct Value {
  enum class Kind { kString, kInt, kBool, kQuantity };
  Kind kind = Kind::kBool;
  std::string s;
  int64_t i = 0;
  bool b = false;
  pod::Quantity q;
};

struct CelSelector::Node {
  enum class Kind { kLiteral, kDriver, kAttribute, kCapacity, kMethod, kCompare, kAnd };
  Kind kind = Kind::kLiteral;
  Value literal;
  std::string domain, name;  // kAttribute, kCapacity; name is the method or operator otherwise
  std::shared_ptr<const Node> lhs, rhs;
};

namespace {

using Node = CelSelector::Node;
using NodePtr = std::shared_ptr<const Node>;

const char* KindName(Value::Kind k) {
  switch (k) {
    case Value::Kind::kString:
      return "string";
    case Value::Kind::kInt:
      return "int";
    case Value::Kind::kBool:
      return "bool";
    case Value::Kind::kQuantity:
      return "Quantity";
  }
  return "?";
}

// ---- tokens -----------------------------------------------------------------

struct Token {
  enum class Kind { kIdent, kString, kInt, kPunct, kEnd };
  Kind kind = Kind::kEnd;
  std::string text;  // the identifier, the unquoted string, the digits, the punctuation
  size_t pos = 0;
};

// Reads a '...' or "..." literal starting at expr[*i] (the quote). Escapes:
// \\ \" \' \n \t. Raw, triple-quoted and byte strings are outside the subset.
absl::StatusOr<std::string> ReadString(const std::string& expr, size_t* i) {
  const char quote = expr[*i];
  if (expr.compare(*i, 3, std::string(3, quote)) == 0) {
    return absl::InvalidArgumentError(absl::StrCat("triple-quoted string at offset ", *i));
  }
  std::string out;
  for (size_t j = *i + 1; j < expr.size(); ++j) {
    char c = expr[j];
    if (c == quote) {
      *i = j + 1;
      return out;
    }
    if (c == '\n') break;
    if (c == '\\' && j + 1 < expr.size()) {
      char e = expr[++j];
      if (e == 'n') {
        c = '\n';
      } else if (e == 't') {
        c = '\t';
      } else if (e == '\\' || e == '"' || e == '\'') {
        c = e;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("escape \\", std::string(1, e), " at offset ", j - 1));
      }
    }
    out += c;
  }
  return absl::InvalidArgumentError(absl::StrCat("unterminated string at offset ", *i));
}

absl::StatusOr<std::vector<Token>> Tokenize(const std::string& expr) {
  static const char* kPuncts[] = {"&&", "||", "==", "!=", "<=", ">=", "<", ">", "!", "(", ")", "[",
                                  "]",  ".",  ",",  "-",  "+",  "*",  "/", "%", "?", ":", "{", "}"};
  std::vector<Token> tokens;
  size_t i = 0;
  while (i < expr.size()) {
    const char c = expr[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < expr.size() &&
             (std::isalnum(static_cast<unsigned char>(expr[j])) || expr[j] == '_'))
        ++j;
      tokens.push_back({Token::Kind::kIdent, expr.substr(i, j - i), i});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < expr.size() && std::isdigit(static_cast<unsigned char>(expr[j]))) ++j;
      if (j < expr.size() &&
          (expr[j] == '.' || expr[j] == 'u' || expr[j] == 'x' || expr[j] == 'e')) {
        return absl::InvalidArgumentError(
            absl::StrCat("number literal at offset ", i, " (only decimal ints are supported)"));
      }
      tokens.push_back({Token::Kind::kInt, expr.substr(i, j - i), i});
      i = j;
    } else if (c == '"' || c == '\'') {
      const size_t start = i;
      absl::StatusOr<std::string> s = ReadString(expr, &i);
      if (!s.ok()) return s.status();
      tokens.push_back({Token::Kind::kString, *s, start});
    } else {
      const char* match = nullptr;
      for (const char* p : kPuncts) {
        if (expr.compare(i, std::char_traits<char>::length(p), p) == 0) {
          match = p;
          break;
        }
      }
      if (!match) {
        return absl::InvalidArgumentError(
            absl::StrCat("character '", std::string(1, c), "' at offset ", i));
      }
      tokens.push_back({Token::Kind::kPunct, match, i});
      i += std::char_traits<char>::length(match);
    }
  }
  tokens.push_back({Token::Kind::kEnd, "", expr.size()});
  return tokens;
}

// ---- parser -----------------------------------------------------------------

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  absl::StatusOr<NodePtr> ParseAll() {
    absl::StatusOr<NodePtr> root = ParseAnd();
    if (root.ok() && Peek().kind != Token::Kind::kEnd) return Unsupported(Peek());
    return root;
  }

 private:
  const Token& Peek() const { return tokens_[pos_]; }
  const Token& Next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }
  bool IsPunct(const char* p) const {
    return Peek().kind == Token::Kind::kPunct && Peek().text == p;
  }
  absl::Status Expect(const char* p) {
    if (!IsPunct(p)) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected '", p, "' at offset ", Peek().pos, Describe(Peek())));
    }
    Next();
    return absl::OkStatus();
  }
  static std::string Describe(const Token& t) {
    return t.kind == Token::Kind::kEnd ? " (end of expression)" : " ('" + t.text + "')";
  }
  static absl::Status Unsupported(const Token& t) {
    if (t.kind == Token::Kind::kPunct && (t.text == "||" || t.text == "!")) {
      return absl::InvalidArgumentError(
          absl::StrCat("operator '", t.text, "' at offset ", t.pos, " is not supported"));
    }
    if (t.kind == Token::Kind::kIdent) {
      return absl::InvalidArgumentError(
          absl::StrCat("identifier '", t.text, "' at offset ", t.pos, " is not supported"));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "unexpected ", t.kind == Token::Kind::kEnd ? "end of expression" : "'" + t.text + "'",
        " at offset ", t.pos));
  }

  static NodePtr Binary(Node::Kind kind, std::string op, NodePtr lhs, NodePtr rhs) {
    auto n = std::make_shared<Node>();
    n->kind = kind;
    n->name = std::move(op);
    n->lhs = std::move(lhs);
    n->rhs = std::move(rhs);
    return n;
  }

  absl::StatusOr<NodePtr> ParseAnd() {
    absl::StatusOr<NodePtr> lhs = ParseCompare();
    while (lhs.ok() && IsPunct("&&")) {
      Next();
      absl::StatusOr<NodePtr> rhs = ParseCompare();
      if (!rhs.ok()) return rhs;
      lhs = Binary(Node::Kind::kAnd, "&&", *lhs, *rhs);
    }
    return lhs;
  }

  absl::StatusOr<NodePtr> ParseCompare() {
    absl::StatusOr<NodePtr> lhs = ParsePostfix();
    if (!lhs.ok()) return lhs;
    for (const char* op : {"==", "!=", "<=", ">=", "<", ">"}) {
      if (!IsPunct(op)) continue;
      Next();
      absl::StatusOr<NodePtr> rhs = ParsePostfix();
      if (!rhs.ok()) return rhs;
      return Binary(Node::Kind::kCompare, op, *lhs, *rhs);
    }
    return lhs;
  }

  // primary ( '.' method '(' argument ')' )*
  absl::StatusOr<NodePtr> ParsePostfix() {
    absl::StatusOr<NodePtr> node = ParsePrimary();
    while (node.ok() && IsPunct(".")) {
      Next();
      const Token method = Next();
      if (method.kind != Token::Kind::kIdent ||
          (method.text != "compareTo" && method.text != "isGreaterThan" &&
           method.text != "isLessThan")) {
        return absl::InvalidArgumentError(absl::StrCat(
            "member '", method.text, "' at offset ", method.pos,
            " (only compareTo, isGreaterThan and isLessThan are supported on values)"));
      }
      if (absl::Status s = Expect("("); !s.ok()) return s;
      absl::StatusOr<NodePtr> arg = ParsePostfix();
      if (!arg.ok()) return arg;
      if (absl::Status s = Expect(")"); !s.ok()) return s;
      node = Binary(Node::Kind::kMethod, method.text, *node, *arg);
    }
    return node;
  }

  absl::StatusOr<NodePtr> ParsePrimary() {
    const Token t = Next();
    auto literal = std::make_shared<Node>();
    if (t.kind == Token::Kind::kPunct && t.text == "(") {
      absl::StatusOr<NodePtr> inner = ParseAnd();
      if (!inner.ok()) return inner;
      if (absl::Status s = Expect(")"); !s.ok()) return s;
      return inner;
    }
    if (t.kind == Token::Kind::kString) {
      literal->literal.kind = Value::Kind::kString;
      literal->literal.s = t.text;
      return NodePtr(literal);
    }
    if (t.kind == Token::Kind::kInt ||
        (t.kind == Token::Kind::kPunct && t.text == "-" && Peek().kind == Token::Kind::kInt)) {
      const std::string digits = t.kind == Token::Kind::kInt ? t.text : "-" + Next().text;
      literal->literal.kind = Value::Kind::kInt;
      if (!absl::SimpleAtoi(digits, &literal->literal.i)) {
        return absl::InvalidArgumentError(absl::StrCat("int literal ", digits, " out of range"));
      }
      return NodePtr(literal);
    }
    if (t.kind == Token::Kind::kIdent && (t.text == "true" || t.text == "false")) {
      literal->literal.kind = Value::Kind::kBool;
      literal->literal.b = t.text == "true";
      return NodePtr(literal);
    }
    if (t.kind == Token::Kind::kIdent && t.text == "quantity") return ParseQuantity();
    if (t.kind == Token::Kind::kIdent && t.text == "device") return ParseDevice();
    if (t.kind == Token::Kind::kIdent) {
      return absl::InvalidArgumentError(
          absl::StrCat("identifier '", t.text, "' at offset ", t.pos, " is not supported"));
    }
    return Unsupported(t);
  }

  // After `quantity`: '(' string ')', folded into a literal.
  absl::StatusOr<NodePtr> ParseQuantity() {
    if (absl::Status s = Expect("("); !s.ok()) return s;
    const Token arg = Next();
    if (arg.kind != Token::Kind::kString) {
      return absl::InvalidArgumentError(
          absl::StrCat("quantity() takes a string literal (offset ", arg.pos, ")"));
    }
    absl::StatusOr<pod::Quantity> q = pod::Quantity::Parse(arg.text);
    if (!q.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("quantity(\"", arg.text, "\"): ", q.status().message()));
    }
    if (absl::Status s = Expect(")"); !s.ok()) return s;
    auto n = std::make_shared<Node>();
    n->literal.kind = Value::Kind::kQuantity;
    n->literal.q = *q;
    return NodePtr(n);
  }

  // After `device`: '.driver' or '.attributes|capacity[<string>].<name>'.
  absl::StatusOr<NodePtr> ParseDevice() {
    if (absl::Status s = Expect("."); !s.ok()) return s;
    const Token field = Next();
    auto n = std::make_shared<Node>();
    if (field.kind == Token::Kind::kIdent && field.text == "driver") {
      n->kind = Node::Kind::kDriver;
      return NodePtr(n);
    }
    if (field.kind != Token::Kind::kIdent ||
        (field.text != "attributes" && field.text != "capacity")) {
      return absl::InvalidArgumentError(absl::StrCat(
          "device.", field.text, " at offset ", field.pos,
          " (only device.driver, device.attributes and device.capacity are supported)"));
    }
    n->kind = field.text == "attributes" ? Node::Kind::kAttribute : Node::Kind::kCapacity;
    if (absl::Status s = Expect("["); !s.ok()) return s;
    const Token domain = Next();
    if (domain.kind != Token::Kind::kString) {
      return absl::InvalidArgumentError(absl::StrCat("device.", field.text, "[...] at offset ",
                                                     domain.pos, " needs a string literal domain"));
    }
    n->domain = domain.text;
    if (absl::Status s = Expect("]"); !s.ok()) return s;
    if (absl::Status s = Expect("."); !s.ok()) return s;
    const Token name = Next();
    if (name.kind != Token::Kind::kIdent) {
      return absl::InvalidArgumentError(absl::StrCat("expected a name after device.", field.text,
                                                     "[\"", n->domain, "\"]. at offset ", name.pos,
                                                     Describe(name)));
    }
    n->name = name.text;
    return NodePtr(n);
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
};

// ---- evaluation -------------------------------------------------------------

absl::Status RuntimeError(const std::string& why) {
  return absl::FailedPreconditionError("CEL runtime error: " + why);
}

// The (domain, name) of an attribute or capacity key: "<domain>/<name>", or
// "<name>" in the driver's domain.
std::pair<std::string, std::string> SplitQualified(const std::string& key,
                                                   const std::string& driver) {
  const size_t slash = key.find('/');
  if (slash == std::string::npos) return {driver, key};
  return {key.substr(0, slash), key.substr(slash + 1)};
}

const nlohmann::json* FindEntry(const nlohmann::json& device, const char* map,
                                const std::string& driver, const Node& n) {
  auto m = device.find(map);
  if (m == device.end() || !m->is_object()) return nullptr;
  for (auto it = m->begin(); it != m->end(); ++it) {
    if (SplitQualified(it.key(), driver) == std::make_pair(n.domain, n.name)) return &it.value();
  }
  return nullptr;
}

absl::StatusOr<Value> AttributeValue(const nlohmann::json& device, const std::string& driver,
                                     const Node& n) {
  const nlohmann::json* a = FindEntry(device, "attributes", driver, n);
  if (!a || !a->is_object()) return RuntimeError("no such key: " + n.name);
  Value v;
  if (a->contains("string") && (*a)["string"].is_string()) {
    v.kind = Value::Kind::kString;
    v.s = (*a)["string"];
  } else if (a->contains("int") && (*a)["int"].is_number_integer()) {
    v.kind = Value::Kind::kInt;
    v.i = (*a)["int"];
  } else if (a->contains("bool") && (*a)["bool"].is_boolean()) {
    v.b = (*a)["bool"];
  } else if (a->contains("version")) {
    return RuntimeError("attribute " + n.domain + "/" + n.name +
                        " is a version, and semver values are not supported");
  } else {
    return RuntimeError("attribute " + n.domain + "/" + n.name + " has no value");
  }
  return v;
}

absl::StatusOr<Value> CapacityValue(const nlohmann::json& device, const std::string& driver,
                                    const Node& n) {
  const nlohmann::json* c = FindEntry(device, "capacity", driver, n);
  if (!c || !c->is_object()) return RuntimeError("no such key: " + n.name);
  auto text = c->find("value");
  if (text == c->end() || !text->is_string()) {
    return RuntimeError("capacity " + n.domain + "/" + n.name + " has no value");
  }
  absl::StatusOr<pod::Quantity> q = pod::Quantity::Parse(*text);
  if (!q.ok()) {
    return RuntimeError("capacity " + n.domain + "/" + n.name + ": " +
                        std::string(q.status().message()));
  }
  Value v;
  v.kind = Value::Kind::kQuantity;
  v.q = *q;
  return v;
}

Value Bool(bool b) {
  Value v;
  v.b = b;
  return v;
}

absl::StatusOr<Value> Compare(const std::string& op, const Value& a, const Value& b) {
  if (a.kind != b.kind) {
    return RuntimeError(
        absl::StrCat("no such overload: ", KindName(a.kind), " ", op, " ", KindName(b.kind)));
  }
  int cmp = 0;
  switch (a.kind) {
    case Value::Kind::kString:
      cmp = a.s.compare(b.s);
      break;
    case Value::Kind::kInt:
      cmp = a.i < b.i ? -1 : (a.i > b.i ? 1 : 0);
      break;
    case Value::Kind::kBool:
      cmp = a.b == b.b ? 0 : 1;
      break;
    case Value::Kind::kQuantity:
      cmp = a.q.Cmp(b.q);
      break;
  }
  if (op == "==") return Bool(cmp == 0);
  if (op == "!=") return Bool(cmp != 0);
  if (a.kind != Value::Kind::kInt) {
    return RuntimeError(absl::StrCat("no such overload: ", KindName(a.kind), " ", op, " ",
                                     KindName(b.kind), " (ordering is supported on ints only)"));
  }
  if (op == "<") return Bool(cmp < 0);
  if (op == "<=") return Bool(cmp <= 0);
  if (op == ">") return Bool(cmp > 0);
  return Bool(cmp >= 0);
}

absl::StatusOr<Value> CallMethod(const std::string& method, const Value& self, const Value& arg) {
  if (self.kind != Value::Kind::kQuantity || arg.kind != Value::Kind::kQuantity) {
    return RuntimeError(absl::StrCat("no such overload: ", KindName(self.kind), ".", method, "(",
                                     KindName(arg.kind), ")"));
  }
  const int cmp = self.q.Cmp(arg.q);
  if (method == "isGreaterThan") return Bool(cmp > 0);
  if (method == "isLessThan") return Bool(cmp < 0);
  Value v;
  v.kind = Value::Kind::kInt;
  v.i = cmp;
  return v;
}

absl::StatusOr<Value> Eval(const Node& n, const std::string& driver, const nlohmann::json& device);

// CEL's && is commutative over errors: false on either side wins.
absl::StatusOr<Value> EvalAnd(const Node& n, const std::string& driver,
                              const nlohmann::json& device) {
  absl::StatusOr<Value> lhs = Eval(*n.lhs, driver, device);
  if (lhs.ok() && lhs->kind != Value::Kind::kBool) {
    return RuntimeError(absl::StrCat("no such overload: ", KindName(lhs->kind), " && ..."));
  }
  if (lhs.ok() && !lhs->b) return Bool(false);
  absl::StatusOr<Value> rhs = Eval(*n.rhs, driver, device);
  if (rhs.ok() && rhs->kind != Value::Kind::kBool) {
    return RuntimeError(absl::StrCat("no such overload: ... && ", KindName(rhs->kind)));
  }
  if (rhs.ok() && !rhs->b) return Bool(false);
  if (!lhs.ok()) return lhs;
  return rhs;
}

absl::StatusOr<Value> Eval(const Node& n, const std::string& driver, const nlohmann::json& device) {
  switch (n.kind) {
    case Node::Kind::kLiteral:
      return n.literal;
    case Node::Kind::kDriver: {
      Value v;
      v.kind = Value::Kind::kString;
      v.s = driver;
      return v;
    }
    case Node::Kind::kAttribute:
      return AttributeValue(device, driver, n);
    case Node::Kind::kCapacity:
      return CapacityValue(device, driver, n);
    case Node::Kind::kAnd:
      return EvalAnd(n, driver, device);
    case Node::Kind::kMethod:
    case Node::Kind::kCompare: {
      absl::StatusOr<Value> a = Eval(*n.lhs, driver, device);
      if (!a.ok()) return a;
      absl::StatusOr<Value> b = Eval(*n.rhs, driver, device);
      if (!b.ok()) return b;
      return n.kind == Node::Kind::kMethod ? CallMethod(n.name, *a, *b) : Compare(n.name, *a, *b);
    }
  }
  return RuntimeError("bad node");
}

}  // namespace

absl::StatusOr<CelSelector> CelSelector::Compile(const std::string& expression) {
  auto fail = [&](const absl::Status& why) {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported CEL expression \"", expression, "\": ", why.message()));
  };
  absl::StatusOr<std::vector<Token>> tokens = Tokenize(expression);
  if (!tokens.ok()) return fail(tokens.status());
  Parser parser(std::move(*tokens));
  absl::StatusOr<NodePtr> root = parser.ParseAll();
  if (!root.ok()) return fail(root.status());
  return CelSelector(expression, *root);
}

absl::StatusOr<bool> CelSelector::Matches(const std::string& driver,
                                          const nlohmann::json& device) const {
  absl::StatusOr<Value> v = Eval(*root_, driver, device);
  if (!v.ok()) return v.status();
  if (v->kind != Value::Kind::kBool) {
    return RuntimeError(absl::StrCat("expression must evaluate to bool, got ", KindName(v->kind)));
  }
  return v->b;
}

}  // namespace devmgr::dra
