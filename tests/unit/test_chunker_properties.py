"""Properties of TreeSitterChunker on arbitrary and code-like text in every language."""

from __future__ import annotations

from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codebase_mcp_search.adapters.tokens import TiktokenCounter
from codebase_mcp_search.adapters.treesitter import AST_LANGUAGES, TreeSitterChunker
from codebase_mcp_search.adapters.treesitter import chunker as chunker_module
from codebase_mcp_search.adapters.treesitter._grammar import PREFIX_MARKS
from codebase_mcp_search.core.models import ChunkDraft, split_lines
from tests.unit.test_treesitter_chunker import RUST_MACRO_BLOCKS

COUNTER = TiktokenCounter()
KINDS = {"function", "method", "class", "header", "module", "block", "text"}
LANGUAGES: list[str | None] = [*sorted(AST_LANGUAGES), "markdown", None]

# (max_tokens, min_tokens, overlap_lines, window_lines): small budgets exercise the splitting.
CONFIGS = [(16, 0, 3, 5), (48, 16, 3, 60), (80, 48, 0, 20), (512, 48, 3, 60)]
CHUNKERS = [
    TreeSitterChunker(COUNTER, max_tokens=m, min_tokens=n, overlap_lines=o, window_lines=w)
    for m, n, o, w in CONFIGS
]

SNIPPETS = {
    "python": """
@dataclass
class Point:
    '''A point.'''
    x: int = 0
    def norm(self) -> int:
        # manhattan
        return abs(self.x) + abs(self.y)
async def main():
    async with session() as s:
        await s.get("/")
if __name__ == "__main__":
    main()
""",
    "javascript": """
import fs from "fs";
/** Reads it. */
export async function read(path) {
  const data = await fs.promises.readFile(path, "utf8");
  return JSON.parse(data);
}
class Cache extends Map {
  get(key) { return super.get(key) ?? null; }
}
const handler = (req, res) => { res.end("ok"); };
module.exports = { read, Cache };
""",
    "typescript": """
export interface User { id: number; name: string }
@Component({ selector: "app" })
export class UserService {
  private users: User[] = [];
  constructor(private http: HttpClient) {}
  find(id: number): User | undefined {
    return this.users.find((u) => u.id === id);
  }
}
namespace Util { export const x = 1; }
type Id = string | number;
export type Output<T> = T extends { _output: infer O }
  ? O
  : never;
export const $ZodAny = core.$constructor("$ZodAny", (inst, def) => {
  inst._zod.parse = (payload) => payload;
});
""",
    "tsx": """
import React, { useState } from "react";
export function Counter({ start }: { start: number }) {
  const [n, setN] = useState(start);
  return <button onClick={() => setN(n + 1)}>{n}</button>;
}
export default class App extends React.Component {
  render() { return <div className="app"><Counter start={1} /></div>; }
}
""",
    "go": """
package main
import "fmt"
// Server serves.
type Server struct {
\tAddr string
}
func (s *Server) Start() error {
\tfor i := 0; i < 3; i++ {
\t\tfmt.Println(i)
\t}
\treturn nil
}
func main() { (&Server{}).Start() }
""",
    "rust": """
use std::collections::HashMap;
/// A cache.
#[derive(Default)]
pub struct Cache { map: HashMap<String, u64> }
impl Cache {
    pub fn get(&self, k: &str) -> Option<u64> {
        self.map.get(k).copied()
    }
}
mod tests {
    #[test]
    fn works() { assert_eq!(1, 1); }
}
"""
    + RUST_MACRO_BLOCKS,
    "java": """
package a.b;
import java.util.*;
/** Repo. */
@Repository
public class Repo<T> extends Base implements Store {
    private final Map<String, T> items = new HashMap<>();
    @Override
    public T get(String id) {
        return items.get(id);
    }
    enum Kind { A, B; int code() { return 1; } }
}
""",
    "c": """
#include <stdlib.h>
#ifndef MAX
#define MAX 10
#endif
typedef struct node {
    struct node *next;
} node_t;
/* Frees a list. */
void free_list(node_t *n) {
    while (n) { node_t *next = n->next; free(n); n = next; }
}
""",
    "cpp": """
#include <string>
namespace app {
template <typename T>
class Box {
public:
    explicit Box(T v) : v_(v) {}
    T get() const { return v_; }
private:
    T v_;
};
std::string Box<int>::name() { return "int"; }
bool operator<(const Box<int>& a, const Box<int>& b) { return a.get() < b.get(); }
}  // namespace app
APP_NAMESPACE_END
APP_API_DECLARATION
class Json {
  APP_PRIVATE_UNLESS_TESTED:
    friend bool operator==(const Json& l, const Json& r) noexcept { return true; }
};
#if USE_KQUEUE
void poll(int fd) { for (;;) {
#else
void poll(int fd) { while (1) {
#endif
    read(fd); } }
#define DEFINE_WATCHER(name) \\
  int name##_init(void) { return 0; }
""",
    "csharp": """
using System.Linq;
namespace App.Models
{
    [Table("users")]
    public record User(int Id, string Name);
    public class Repo : IRepo
    {
        public User? Find(int id) => _users.FirstOrDefault(u => u.Id == id);
        public string Name { get; set; }
    }
}
""",
    "ruby": """
require "set"
module Util
  # Tags.
  class Tags < Base
    def initialize(*tags)
      @tags = Set.new(tags)
    end
    def self.empty = new
  end
end
puts Util::Tags.empty.inspect
""",
    "php": """
<?php
namespace App;
use Foo\\Bar;
#[Route("/users")]
final class UserController extends Controller {
    public function index(): array {
        return array_map(fn($u) => $u->name, $this->users);
    }
}
function helper(int $x): int { return $x * 2; }
?>
<p>html <?= helper(2) ?></p>
""",
    "kotlin": """
package app
import kotlinx.coroutines.*
@JvmInline
value class Id(val v: Int)
class Repo(private val db: Db) {
    suspend fun find(id: Id): User? = withContext(Dispatchers.IO) {
        db.query(id)
    }
    companion object { const val TABLE = "users" }
}
fun main() = runBlocking { println(Repo(Db()).find(Id(1))) }
""",
    "swift": """
import Foundation
/// A store.
@MainActor
final class Store: ObservableObject {
    @Published var items: [String] = []
    func add(_ item: String) {
        items.append(item)
    }
}
extension Store { var count: Int { items.count } }
struct Point { let x: Int }
""",
    "scala": """
package app
import scala.concurrent.Future
/** Repo. */
trait Repo[T] {
  def find(id: Int): Future[Option[T]]
}
case class User(id: Int, name: String)
object Main extends App {
  val users = List(User(1, "a"))
  users.foreach(u => println(u.name))
}
package object data {
  implicit val showUser: Show[User] =
    new Show[User] {
      def show(u: User): String =
        u.name
      // the next one's
    }
  /** Lists. */
  given listShow: Show[List[Int]] with
    def show(xs: List[Int]) = xs.mkString
}
""",
    "bash": """
#!/usr/bin/env bash
set -euo pipefail
# Logs.
log() {
  echo "[$(date)] $*" >&2
}
for f in "$@"; do
  case "$f" in
    *.txt) log "text $f" ;;
  esac
done
if command -v hub; then
  _hub() { hub "$@"; }
elif true; then :; else
  function _nohub {
    return 1
  }
fi
_command_exists mvim && function mvimt { command mvim "$@"; }
""",
    "elixir": """
defmodule App.Cache do
  @moduledoc "A cache."
  use GenServer
  @doc \"\"\"
  Starts it.
  \"\"\"
  @spec start_link(keyword) :: GenServer.on_start()
  def start_link(opts \\\\ []), do: GenServer.start_link(__MODULE__, opts)
  # Guards and pattern heads.
  defp fetch(%{} = m, k) when is_atom(k) do
    case Map.fetch(m, k) do
      {:ok, v} -> v
      :error -> nil
    end
  end
  defmacro cached(do: block), do: quote(do: unquote(block))
  def unquote(:"name!")(x), do: x
  def a <> b, do: a
  defimpl Inspect do
    def inspect(_, _), do: "#Cache<>"
  end
end
""",
    "lua": """
local M = {}
-- Sets the server up.
function M.setup(opts)
  opts = opts or {}
  for k, v in pairs(opts) do M[k] = v end
end
function M:call(...) return self.fn(...) end
local function helper(a, b) return a + b end
M.root_dir = function(fname)
  return vim.fs.dirname(fname)
end
local cb = function() end
return {
  default_config = { cmd = { 'srv' }, root_dir = M.root_dir },
  docs = { description = [[ A server. ]] },
}
""",
    "dart": """
import 'dart:async';
/// A repository of users.
abstract class UserRepo<T> extends Base with Logging implements Repo {
  final Map<String, T> _cache = {};
  UserRepo(this.name) : super(name);
  UserRepo.empty() : this('');
  factory UserRepo.of(String n) => MemoryRepo(n);
  @override
  Future<T?> find(String id) async {
    return _cache[id] ?? await load(id);
  }
  int get size => _cache.length;
  set limit(int v) { _limit = v; }
  bool operator ==(Object other) => identical(this, other);
  Future<T> load(String id);
}
enum Status { active, banned }
mixin Logging { void log(String m) => print(m); }
extension Twice on int { int get twice => this * 2; }
typedef Loader = Future<void> Function(String);
void main(List<String> args) => runApp(args);
final greet = (String n) => 'hi $n';
""",
    "r": """
library(dplyr)
#' Summarise a data frame.
#' @param df a data frame
#' @export
summarise_df <- function(df, ...) {
  df %>% group_by(...) %>%
    summarise(n = n())
}
normalise = function(x) (x - mean(x)) / sd(x)
`%||%` <- function(a, b) if (is.null(a)) b else a
env$handler <- function() NULL
Queue <- R6::R6Class("Queue",
  public = list(
    items = list(),
    add = function(x) { self$items <- c(self$items, x); invisible(self) }
  ),
  private = list(secret = function() 42)
)
setClass("Person", representation(name = "character"))
setMethod("show", "Person", function(object) cat(object@name))
for (i in 1:3) print(i)
""",
    "haskell": """
{-# LANGUAGE ScopedTypeVariables #-}
-- | A key-value store.
module Data.Store (Store, empty, insert) where
import qualified Data.Map as M
-- | The store.
newtype Store k v = Store (M.Map k v) deriving (Show)
data Op = Put | Get
  deriving (Eq, Show)
type Key = String
{-# INLINE empty #-}
empty :: Store k v
empty = Store M.empty
insert :: Ord k => k -> v -> Store k v -> Store k v
insert k v (Store m) = Store (M.insert k v m)
size (Store m) = M.size m
size' = length
class Container f where
  cempty :: f a
  cinsert :: a -> f a -> f a
instance Container [] where
  cempty = []
  cinsert = (:)
x <+> y = x ++ y
main :: IO ()
main = do
  print (size empty)
  where helper = 1
""",
    "ocaml": """
open Base
(** A counter. *)
let counter = ref 0
let incr () = counter := !counter + 1
let rec fib n = if n < 2 then n else fib (n - 1) + fib (n - 2)
and even n = n mod 2 = 0
let ( >>= ) m f = Option.bind m ~f
type t = { name : string; age : int }
and u = A | B of int
exception Not_found_in of string
module Store = struct
  (** Finds a value. *)
  let find tbl k = Hashtbl.find_opt tbl k
  module Inner = struct let x = 1 end
end
module type S = sig val f : int -> int end
module Make (X : S) : S = struct let f = X.f end
class point x0 = object
  val mutable x = x0
  method move d = x <- x + d
end
external now : unit -> float = "caml_now"
let () = print_endline "done"
let handler = fun req -> respond req
""",
    "ocaml_interface": """
(** A counter. *)
type t
type 'a tree = Leaf | Node of 'a tree * 'a * 'a tree
val create : unit -> t
val ( >>= ) : 'a option -> ('a -> 'b option) -> 'b option
external now : unit -> float = "caml_now"
exception Not_found_in of string
module type S = sig
  val f : int -> int
  module Inner : sig val x : int end
end
module Make (X : S) : S
class point : int -> object method move : int -> unit end
class type printer = object method print : unit end
""",
    "zig": """
const std = @import("std");
//! The list module.
/// A growable list.
pub fn List(comptime T: type) type {
    return struct {
        items: []T,
        const Self = @This();
        /// Appends one item.
        pub fn append(self: *Self, item: T) !void {
            try self.items.append(item);
        }
    };
}
pub const Color = enum(u8) { red, green, _ };
const Value = union(enum) { int: i64, float: f64 };
const Point = packed struct { x: u8, y: u8 };
extern "c" fn write(fd: c_int, buf: [*]const u8, n: usize) isize;
const max_len: usize = 1024;
test "list appends" {
    var l = List(u8){ .items = &.{} };
    try l.append(1);
}
test simple {}
comptime {
    std.debug.assert(max_len > 0);
}
""",
    "erlang": """
%%% The cache server.
-module(cache).
-behaviour(gen_server).
-export([start_link/0, get/1]).
-include_lib("stdlib/include/ms_transform.hrl").
-record(state, {tab :: ets:tid(), hits = 0 :: integer()}).
-type key() :: atom() | binary().
-opaque handle() :: pid().
-define(TIMEOUT, 5000).
%% @doc Starts the server.
-spec start_link() -> {ok, pid()}.
start_link() ->
    gen_server:start_link({local, ?MODULE}, ?MODULE, [], []).
get(Key) when is_atom(Key) ->
    gen_server:call(?MODULE, {get, Key}, ?TIMEOUT);
get(Key) ->
    get(binary_to_atom(Key)).
handle_call({get, K}, _From, #state{tab = T} = S) ->
    case ets:lookup(T, K) of
        [{K, V}] -> {reply, {ok, V}, S};
        [] -> {reply, error, S}
    end.
-callback init(term()) -> ok.
""",
    "markdown": """
# Title
Some *text* here.
## Section
- item one
```python
# not a heading
print("hi")
```
### Deeper
| a | b |
""",
}
ALL_LINES = sorted({line for text in SNIPPETS.values() for line in text.splitlines()})

separators = st.sampled_from(["\n", "\n", "\n", "\r\n", "\n\n", "\r", "\u2028", "\x0c"])


def code_like(language: str | None) -> st.SearchStrategy[str]:
    """Lines of real code (mostly this language's), shuffled, repeated and cut short."""
    own = SNIPPETS.get(language or "", "").splitlines() or ALL_LINES
    line = st.one_of(st.sampled_from(own), st.sampled_from(own), st.sampled_from(ALL_LINES))
    cut_line = st.tuples(line, st.one_of(st.none(), st.integers(0, 40))).map(
        lambda pair: pair[0] if pair[1] is None else pair[0][: pair[1]]
    )
    return st.tuples(st.lists(cut_line, max_size=80), separators).map(
        lambda pair: pair[1].join(pair[0])
    )


def arbitrary_text() -> st.SearchStrategy[str]:
    """Any unicode text, and text made of arbitrary lines mixed with code lines."""
    mixed = st.tuples(
        st.lists(st.one_of(st.text(max_size=60), st.sampled_from(ALL_LINES)), max_size=40),
        separators,
    ).map(lambda pair: pair[1].join(pair[0]))
    return st.one_of(st.text(max_size=400), mixed)


def check_contract(text: str, chunks: list[ChunkDraft], max_tokens: int) -> None:
    lines = split_lines(text)
    covered: set[int] = set()
    previous_start = 0
    for chunk in chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines)
        assert chunk.start_line >= previous_start
        previous_start = chunk.start_line
        assert chunk.content == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
        assert lines[chunk.start_line - 1].strip()
        assert lines[chunk.end_line - 1].strip()
        assert chunk.kind in KINDS
        assert chunk.token_count == COUNTER.count(chunk.content)
        if chunk.start_line != chunk.end_line:
            assert chunk.token_count <= max_tokens
        covered.update(range(chunk.start_line, chunk.end_line + 1))
    for number, line in enumerate(lines, 1):
        if line.strip():
            assert number in covered, f"line {number} {line!r} is in no chunk"


PROPERTY_SETTINGS = settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@pytest.mark.parametrize("language", LANGUAGES)
@PROPERTY_SETTINGS
@given(text=arbitrary_text(), config=st.integers(0, len(CONFIGS) - 1))
def test_arbitrary_text_is_covered_within_budget(
    language: str | None, text: str, config: int
) -> None:
    chunks = CHUNKERS[config].chunk("file", text, language)
    check_contract(text, chunks, CONFIGS[config][0])


@pytest.mark.parametrize("language", LANGUAGES)
@PROPERTY_SETTINGS
@given(data=st.data(), config=st.integers(0, len(CONFIGS) - 1))
def test_code_like_text_is_covered_within_budget(
    language: str | None, data: st.DataObject, config: int
) -> None:
    text = data.draw(code_like(language))
    chunks = CHUNKERS[config].chunk("file", text, language)
    check_contract(text, chunks, CONFIGS[config][0])


@pytest.mark.parametrize("language", sorted(AST_LANGUAGES))
def test_real_snippets_are_parsed_into_definitions(language: str) -> None:
    text = SNIPPETS[language].lstrip("\n")
    chunks = TreeSitterChunker(COUNTER, min_tokens=0).chunk("file", text, language)
    check_contract(text, chunks, 512)
    assert any(c.kind in {"function", "method", "class"} for c in chunks)


@pytest.mark.parametrize("language", sorted(PREFIX_MARKS))
@PROPERTY_SETTINGS
@given(data=st.data(), config=st.integers(0, len(CONFIGS) - 1))
def test_text_without_prefix_marks_needs_no_comment_query(
    language: str, data: st.DataObject, config: int
) -> None:
    text = data.draw(st.one_of(code_like(language), arbitrary_text()))
    for mark in PREFIX_MARKS[language].decode():
        text = text.replace(mark, "")
    with patch.object(chunker_module, "PREFIX_MARKS", {}):
        queried = CHUNKERS[config].chunk("file", text, language)
    assert CHUNKERS[config].chunk("file", text, language) == queried
