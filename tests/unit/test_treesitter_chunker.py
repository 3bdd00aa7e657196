"""TreeSitterChunker: definitions become chunks, big ones split, small ones merge, nothing lost."""

from __future__ import annotations

import itertools
import textwrap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from codebase_mcp_search.adapters.tokens import TiktokenCounter
from codebase_mcp_search.adapters.treesitter import AST_LANGUAGES, TreeSitterChunker
from codebase_mcp_search.core import languages
from codebase_mcp_search.core.models import ChunkDraft, split_lines
from codebase_mcp_search.core.ports import Chunker

COUNTER = TiktokenCounter()


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def spans(chunks: list[ChunkDraft]) -> list[tuple[str | None, str | None, int, int]]:
    return [(c.kind, c.symbol, c.start_line, c.end_line) for c in chunks]


def assert_contract(text: str, chunks: list[ChunkDraft], max_tokens: int) -> None:
    lines = split_lines(text)
    covered: set[int] = set()
    starts = [c.start_line for c in chunks]
    assert starts == sorted(starts)
    for c in chunks:
        assert 1 <= c.start_line <= c.end_line <= len(lines)
        assert c.content == "\n".join(lines[c.start_line - 1 : c.end_line])
        assert lines[c.start_line - 1].strip()
        assert lines[c.end_line - 1].strip()
        assert COUNTER.count(c.content) <= max_tokens or c.start_line == c.end_line
        covered.update(range(c.start_line, c.end_line + 1))
    missing = [i for i, line in enumerate(lines, 1) if line.strip() and i not in covered]
    assert not missing


@dataclass(frozen=True)
class Sample:
    language: str
    text: str
    # (kind, symbol, start, end) chunks expected with the default budget and no merging
    whole: list[tuple[str, str | None, int, int]]
    # chunks expected when `split_budget` tokens force the class apart
    split: list[tuple[str, str | None, int, int]]
    split_budget: int = 40


SAMPLES = [
    Sample(
        "python",
        src('''
            """Geometry helpers."""
            import math


            # Square a number.
            @cache
            def square(x: float) -> float:
                """Return x squared."""
                return x * x


            class Circle(Shape):
                """A circle."""

                unit = 1.0

                def __init__(self, radius: float) -> None:
                    self.radius = radius

                @property
                def area(self) -> float:
                    return math.pi * square(self.radius)


            if __name__ == "__main__":
                print(Circle(2.0).area)
            '''),
        whole=[
            ("module", None, 1, 2),
            ("function", "square", 5, 9),
            ("class", "Circle", 12, 22),
            ("module", None, 25, 26),
        ],
        split=[
            ("header", "Circle", 12, 15),
            ("method", "Circle.__init__", 17, 18),
            ("method", "Circle.area", 20, 22),
        ],
    ),
    Sample(
        "javascript",
        src("""
            import { readFile } from "node:fs/promises";

            /**
             * Adds two numbers.
             */
            export function add(a, b) {
              return a + b;
            }

            export const double = (x) => x * 2;

            // Counts things.
            export class Counter {
              count = 0;

              // Add one.
              increment() {
                this.count += 1;
              }

              reset() {
                this.count = 0;
              }
            }

            console.log(add(1, 2));
            """),
        whole=[
            ("module", None, 1, 1),
            ("function", "add", 3, 8),
            ("function", "double", 10, 10),
            ("class", "Counter", 12, 24),
            ("module", None, 26, 26),
        ],
        split=[
            ("header", "Counter", 12, 14),
            ("method", "Counter.increment", 16, 19),
            ("method", "Counter.reset", 21, 24),
        ],
        split_budget=30,
    ),
    Sample(
        "typescript",
        src("""
            import { Injectable } from "@angular/core";

            export interface Shape {
              area(): number;
            }

            /** Provides shapes. */
            @Injectable({ providedIn: "root" })
            export class ShapeService {
              private readonly shapes: Shape[] = [];

              @Log()
              add(shape: Shape): void {
                this.shapes.push(shape);
              }

              total(): number {
                return this.shapes.reduce((sum, s) => sum + s.area(), 0);
              }
            }

            export function makeService(): ShapeService {
              return new ShapeService();
            }
            """),
        whole=[
            ("module", None, 1, 1),
            ("class", "Shape", 3, 5),
            ("class", "ShapeService", 7, 20),
            ("function", "makeService", 22, 24),
        ],
        split=[
            ("header", "ShapeService", 7, 10),
            ("method", "ShapeService.add", 12, 15),
            ("method", "ShapeService.total", 17, 20),
        ],
    ),
    Sample(
        "tsx",
        src("""
            import React from "react";

            type Props = { name: string };

            /** Greets the user. */
            export function Greeting({ name }: Props) {
              return <h1>Hello, {name}!</h1>;
            }

            export const Farewell = ({ name }: Props) => {
              return <p>Bye {name}</p>;
            };

            export class Clock extends React.Component<Props> {
              state = { now: new Date() };

              render() {
                return <span>{this.state.now.toISOString()}</span>;
              }
            }
            """),
        whole=[
            ("module", None, 1, 3),
            ("function", "Greeting", 5, 8),
            ("function", "Farewell", 10, 12),
            ("class", "Clock", 14, 20),
        ],
        split=[
            ("header", "Clock", 14, 15),
            ("method", "Clock.render", 17, 20),
        ],
        split_budget=30,
    ),
    Sample(
        "go",
        src("""
            package server

            import "fmt"

            // Server serves requests.
            type Server struct {
            \tAddr string
            }

            // Start starts the server.
            func (s *Server) Start() error {
            \tfmt.Println("listening on", s.Addr)
            \treturn nil
            }

            // New makes a server.
            func New(addr string) *Server {
            \treturn &Server{Addr: addr}
            }
            """),
        whole=[
            ("module", None, 1, 3),
            ("class", "Server", 5, 8),
            ("method", "Server.Start", 10, 14),
            ("function", "New", 16, 19),
        ],
        split=[("method", "Server.Start", 10, 14)],
    ),
    Sample(
        "rust",
        src("""
            use std::fmt;

            /// A point in the plane.
            #[derive(Debug, Clone)]
            pub struct Point {
                pub x: i32,
                pub y: i32,
            }

            impl Point {
                /// Makes a point.
                pub fn new(x: i32, y: i32) -> Self {
                    Point { x, y }
                }

                #[inline]
                pub fn norm(&self) -> i32 {
                    self.x.abs() + self.y.abs()
                }
            }

            impl fmt::Display for Point {
                fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    write!(f, "({}, {})", self.x, self.y)
                }
            }

            pub fn origin() -> Point {
                Point::new(0, 0)
            }
            """),
        whole=[
            ("module", None, 1, 1),
            ("class", "Point", 3, 8),
            ("class", "Point", 10, 20),
            ("class", "Point", 22, 26),
            ("function", "origin", 28, 30),
        ],
        split=[
            ("header", "Point", 10, 10),
            ("method", "Point.new", 11, 14),
            ("method", "Point.norm", 16, 20),
        ],
    ),
    Sample(
        "java",
        src("""
            package com.example;

            import java.util.List;

            /**
             * Greets people.
             */
            @Service
            public class Greeter {
                private final String name;

                /** Creates a greeter. */
                public Greeter(String name) {
                    this.name = name;
                }

                @Override
                public String toString() {
                    return "Greeter(" + name + ")";
                }
            }
            """),
        whole=[("module", None, 1, 3), ("class", "Greeter", 5, 21)],
        split=[
            ("header", "Greeter", 5, 10),
            ("method", "Greeter.Greeter", 12, 15),
            ("method", "Greeter.toString", 17, 21),
        ],
    ),
    Sample(
        "c",
        src(r"""
            #include <stdio.h>

            /* A point. */
            struct point {
                int x;
                int y;
            };

            // Adds two ints.
            static int add(int a, int b) {
                return a + b;
            }

            int main(void) {
                printf("%d\n", add(1, 2));
                return 0;
            }
            """),
        whole=[
            ("module", None, 1, 1),
            ("class", "point", 3, 7),
            ("function", "add", 9, 12),
            ("function", "main", 14, 17),
        ],
        split=[("function", "add", 9, 12)],
    ),
    Sample(
        "cpp",
        src("""
            #include <vector>

            namespace geo {

            /// A shape.
            class Shape {
            public:
                virtual ~Shape() = default;
                virtual double area() const = 0;
            };

            template <typename T>
            T max_of(T a, T b) {
                return a > b ? a : b;
            }

            double Circle::area() const {
                return 3.14159 * r_ * r_;
            }

            }  // namespace geo
            """),
        whole=[
            ("module", None, 1, 3),
            ("class", "Shape", 5, 10),
            ("function", "max_of", 12, 15),
            ("function", "Circle.area", 17, 19),
            ("module", None, 21, 21),
        ],
        split=[("function", "max_of", 12, 15)],
    ),
    Sample(
        "csharp",
        src("""
            using System;

            namespace Demo
            {
                /// <summary>Greets people.</summary>
                [Serializable]
                public class Greeter
                {
                    private readonly string _name;

                    public Greeter(string name)
                    {
                        _name = name;
                    }

                    [Obsolete("Use Greet2")]
                    public void Greet()
                    {
                        Console.WriteLine(_name);
                    }
                }
            }
            """),
        # the namespace's closing brace joins the chunk before it
        whole=[("module", None, 1, 4), ("class", "Greeter", 5, 22)],
        split=[
            ("header", "Greeter", 5, 9),
            ("method", "Greeter.Greeter", 11, 14),
            ("method", "Greeter.Greet", 16, 22),
        ],
    ),
    Sample(
        "ruby",
        src("""
            require "json"

            module Shapes
              # A circle.
              class Circle
                attr_reader :radius

                def initialize(radius)
                  @radius = radius
                end

                # The area.
                def area
                  3.14159 * radius * radius
                end
              end
            end

            def helper(x)
              x * 2
            end
            """),
        whole=[
            ("module", None, 1, 1),
            ("class", "Shapes", 3, 17),
            ("function", "helper", 19, 21),
        ],
        split=[
            ("header", "Shapes", 3, 3),
            ("header", "Shapes.Circle", 4, 6),
            ("method", "Shapes.Circle.initialize", 8, 10),
            ("method", "Shapes.Circle.area", 12, 17),
        ],
        split_budget=30,
    ),
    Sample(
        "php",
        src("""
            <?php

            namespace App\\Models;

            /**
             * A user.
             */
            #[Entity]
            class User
            {
                protected string $name = '';

                /** Get the name. */
                public function getName(): string
                {
                    return $this->name;
                }

                public function setName(string $name): void
                {
                    $this->name = $name;
                }
            }

            function helper($x) {
                return $x * 2;
            }
            """),
        whole=[
            ("module", None, 1, 3),
            ("class", "User", 5, 23),
            ("function", "helper", 25, 27),
        ],
        split=[
            ("header", "User", 5, 11),
            ("method", "User.getName", 13, 17),
            ("method", "User.setName", 19, 23),
        ],
    ),
    Sample(
        "kotlin",
        src("""
            package com.example

            import kotlin.math.PI

            /**
             * A circle.
             */
            @Serializable
            data class Circle(val r: Double) {
                fun area(): Double {
                    return PI * r * r
                }

                fun scale(k: Double): Circle {
                    return Circle(r * k)
                }
            }

            fun main() {
                println(Circle(2.0).area())
            }
            """),
        whole=[
            ("module", None, 1, 3),
            ("class", "Circle", 5, 17),
            ("function", "main", 19, 21),
        ],
        split=[
            ("header", "Circle", 5, 9),
            ("method", "Circle.area", 10, 12),
            ("method", "Circle.scale", 14, 17),
        ],
    ),
    Sample(
        "swift",
        src("""
            import Foundation

            /// A counter.
            @available(iOS 13, *)
            class Counter {
                var count = 0

                func increment() {
                    count += 1
                }

                func reset() {
                    count = 0
                }
            }

            func helper(_ x: Int) -> Int {
                return x * 2
            }
            """),
        whole=[
            ("module", None, 1, 1),
            ("class", "Counter", 3, 15),
            ("function", "helper", 17, 19),
        ],
        split=[
            ("header", "Counter", 3, 6),
            ("method", "Counter.increment", 8, 10),
            ("method", "Counter.reset", 12, 15),
        ],
        split_budget=25,
    ),
    Sample(
        "scala",
        src("""
            package example

            import scala.math._

            /** A circle. */
            @SerialVersionUID(1L)
            case class Circle(r: Double) {
              def area: Double = Pi * r * r

              def scale(k: Double): Circle = {
                Circle(r * k)
              }
            }

            object Main extends App {
              println(Circle(1.0).area)
            }
            """),
        whole=[
            ("module", None, 1, 3),
            ("class", "Circle", 5, 13),
            ("class", "Main", 15, 17),
        ],
        split=[
            ("header", "Circle", 5, 7),
            ("method", "Circle.area", 8, 8),
            ("method", "Circle.scale", 10, 13),
        ],
        split_budget=30,
    ),
    Sample(
        "bash",
        src("""
            #!/usr/bin/env bash
            set -euo pipefail

            # Greets someone.
            greet() {
              echo "hello $1"
            }

            function cleanup {
              rm -rf "$TMP"
            }

            TMP=$(mktemp -d)
            trap cleanup EXIT
            greet world
            """),
        whole=[
            ("module", None, 1, 2),
            ("function", "greet", 4, 7),
            ("function", "cleanup", 9, 11),
            ("module", None, 13, 15),
        ],
        split=[("function", "greet", 4, 7)],
    ),
    Sample(
        "elixir",
        src('''
            defmodule Shapes.Circle do
              @moduledoc "Circles."
              alias Shapes.Point

              @doc """
              The area.
              """
              @spec area(t()) :: float
              def area(%{r: r}) when r >= 0 do
                :math.pi() * r * r
              end

              # Scales by k.
              defp scale(c, k), do: %{c | r: c.r * k}
            end

            defimpl String.Chars, for: Shapes.Circle do
              def to_string(c), do: "circle #{c.r}"
            end
            '''),
        whole=[
            ("class", "Shapes.Circle", 1, 15),
            ("class", "String.Chars", 17, 19),
        ],
        # @doc and @spec stay with their def; @moduledoc and alias are the module's own code.
        split=[
            ("module", "Shapes.Circle", 1, 3),
            ("method", "Shapes.Circle.area", 5, 11),
            ("method", "Shapes.Circle.scale", 13, 15),
        ],
        split_budget=60,
    ),
    Sample(
        "lua",
        src("""
            local M = {}

            --- The area of a circle.
            function M.area(r)
              return math.pi * r * r
            end

            function M:scale(k)
              self.r = self.r * k
            end

            local function clamp(x)
              return math.max(0, x)
            end

            M.describe = function(c)
              return "circle " .. c.r
            end

            return M
            """),
        whole=[
            ("module", None, 1, 1),
            ("function", "M.area", 3, 6),
            ("function", "M:scale", 8, 10),
            ("function", "clamp", 12, 14),
            ("function", "M.describe", 16, 18),
            ("module", None, 20, 20),
        ],
        split=[("function", "M.area", 3, 6), ("function", "M.describe", 16, 18)],
        split_budget=25,
    ),
    Sample(
        "dart",
        src("""
            import 'dart:math';

            /// The area of a circle.
            double area(double r) {
              return pi * r * r;
            }

            // A shape with a name.
            abstract class Shape {
              final String name;
              Shape(this.name);

              /// Its size.
              double get size => 0;

              @override
              String toString() {
                return 'Shape($name)';
              }
            }

            enum Color { red, green }

            mixin Walker on Shape {
              void walk() => print(name);
            }
            """),
        # A function is its signature and the ``function_body`` sibling after it.
        whole=[
            ("module", None, 1, 1),
            ("function", "area", 3, 6),
            ("class", "Shape", 8, 20),
            ("class", "Color", 22, 22),
            ("class", "Walker", 24, 26),
        ],
        split=[
            ("header", "Shape", 8, 10),
            ("method", "Shape.Shape", 11, 11),
            ("method", "Shape.size", 13, 14),
            ("method", "Shape.toString", 16, 20),
        ],
        split_budget=30,
    ),
    Sample(
        "r",
        src("""
            library(stats)

            #' The area of a circle.
            #' @param r the radius
            area <- function(r) {
              pi * r^2
            }

            scale = function(x, k = 2) x * k

            Account <- R6Class("Account",
              public = list(
                balance = 0,
                deposit = function(x) {
                  self$balance <- self$balance + x
                }
              )
            )

            setGeneric("describe", function(obj) standardGeneric("describe"))
            x <- 3
            """),
        whole=[
            ("module", None, 1, 1),
            ("function", "area", 3, 7),
            ("function", "scale", 9, 9),
            ("class", "Account", 11, 18),
            ("function", "describe", 20, 20),
            ("module", None, 21, 21),
        ],
        split=[("header", "Account", 11, 13), ("method", "Account.deposit", 14, 18)],
        split_budget=30,
    ),
    Sample(
        "haskell",
        src("""
            module Shapes (Shape (..), area) where

            import Data.List (sort)

            -- | A shape.
            data Shape = Circle Double | Square Double
              deriving (Show)

            -- | The area.
            area :: Shape -> Double
            area (Circle r) = pi * r * r
            area (Square s) = s * s

            class HasArea a where
              -- | Its area.
              areaOf :: a -> Double
              areaOf _ = 0

            instance HasArea Shape where
              areaOf = area
            """),
        # The signature is the function's, with its haddock; the equations are one function.
        # An instance is named by its type (as a Rust impl is).
        whole=[
            ("module", None, 1, 3),
            ("class", "Shape", 5, 7),
            ("function", "area", 9, 12),
            ("class", "HasArea", 14, 17),
            ("class", "Shape", 19, 20),
        ],
        split=[("header", "HasArea", 14, 14), ("method", "HasArea.areaOf", 15, 17)],
        split_budget=25,
    ),
    Sample(
        "ocaml",
        src("""
            open Printf

            (** The area of a circle. *)
            let area r =
              3.14 *. r *. r

            let pi = 3.14

            (* A shape. *)
            type shape = Circle of float | Square of float

            module Geometry = struct
              (** Scales a length. *)
              let scale k s = k *. s

              let double = fun s -> 2. *. s
            end

            let () = printf "%f\\n" (area 1.)
            """),
        # A ``let`` without parameters or ``fun`` is a value: module code.
        whole=[
            ("module", None, 1, 1),
            ("function", "area", 3, 5),
            ("module", None, 7, 7),
            ("class", "shape", 9, 10),
            ("class", "Geometry", 12, 17),
            ("module", None, 19, 19),
        ],
        split=[
            ("module", "Geometry", 12, 12),
            ("method", "Geometry.scale", 13, 14),
            ("method", "Geometry.double", 16, 17),
        ],
        split_budget=30,
    ),
    Sample(
        "ocaml_interface",
        src("""
            (** Stacks of values. *)
            type 'a t

            (** [create ()] is an empty stack. *)
            val create : unit -> 'a t

            (** [push x s] adds [x] on top of [s]. *)
            val push : 'a -> 'a t -> unit

            external length : 'a t -> int = "stack_length"

            exception Empty

            module type ORDERED = sig
              type t
              val compare : t -> t -> int
            end

            class type printer = object method print : unit end
            """),
        # A ``val`` declares a function (or a value: an interface does not tell), with its doc.
        whole=[
            ("class", "t", 1, 2),
            ("function", "create", 4, 5),
            ("function", "push", 7, 8),
            ("function", "length", 10, 10),
            ("class", "Empty", 12, 12),
            ("class", "ORDERED", 14, 17),
            ("class", "printer", 19, 19),
        ],
        split=[
            ("module", "ORDERED", 14, 14),
            ("method", "ORDERED.compare", 16, 17),
        ],
        split_budget=12,
    ),
    Sample(
        "zig",
        src("""
            const std = @import("std");

            /// A point.
            pub const Point = struct {
                x: f32,
                y: f32,

                /// The origin.
                pub fn origin() Point {
                    return .{ .x = 0, .y = 0 };
                }
            };

            // Adds two numbers.
            pub fn add(a: i32, b: i32) i32 {
                return a + b;
            }

            test "add works" {
                try std.testing.expect(add(1, 2) == 3);
            }
            """),
        whole=[
            ("module", None, 1, 1),
            ("class", "Point", 3, 12),
            ("function", "add", 14, 17),
            ("function", "add works", 19, 21),
        ],
        split=[
            ("header", "Point", 3, 6),
            ("method", "Point.origin", 8, 11),
            ("header", "Point", 12, 12),
        ],
        split_budget=30,
    ),
    Sample(
        "erlang",
        src("""
            -module(shapes).
            -export([area/1, start/0]).

            -record(circle, {r = 0 :: float()}).

            %% @doc The area of a shape.
            -spec area(shape()) -> float().
            area(#circle{r = R}) ->
                math:pi() * R * R;
            area({square, S}) ->
                S * S.

            start() ->
                io:format("~p~n", [area({square, 2})]).
            """),
        # The -spec is the function's; its clauses are one function.
        whole=[
            ("module", None, 1, 2),
            ("class", "circle", 4, 4),
            ("function", "area", 6, 11),
            ("function", "start", 13, 14),
        ],
        split=[("function", "area", 6, 7), ("block", "area", 8, 9), ("block", "area", 10, 11)],
        split_budget=30,
    ),
]


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.language)
def test_definitions_become_chunks_with_their_comments(sample: Sample) -> None:
    chunker = TreeSitterChunker(COUNTER, min_tokens=0)
    chunks = chunker.chunk(f"file.{sample.language}", sample.text, sample.language)
    assert spans(chunks) == sample.whole
    assert_contract(sample.text, chunks, 512)


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.language)
def test_a_class_over_budget_splits_into_header_and_methods(sample: Sample) -> None:
    chunker = TreeSitterChunker(COUNTER, max_tokens=sample.split_budget, min_tokens=0)
    chunks = chunker.chunk(f"file.{sample.language}", sample.text, sample.language)
    found = spans(chunks)
    for expected in sample.split:
        assert expected in found
    assert_contract(sample.text, chunks, sample.split_budget)


def test_the_chunker_implements_the_port() -> None:
    assert isinstance(TreeSitterChunker(COUNTER), Chunker)


def test_every_code_language_has_a_grammar() -> None:
    assert AST_LANGUAGES == languages.AST_LANGUAGES
    assert {s.language for s in SAMPLES} == AST_LANGUAGES


def test_threads_can_share_a_chunker() -> None:
    chunker = TreeSitterChunker(COUNTER, min_tokens=0)
    jobs = [(s.language, s.text) for s in SAMPLES] * 8
    expected = [chunker.chunk("f", text, language) for language, text in jobs]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda job: chunker.chunk("f", job[1], job[0]), jobs))
    assert results == expected


@pytest.mark.parametrize(
    "kwargs", [{"max_tokens": 0}, {"min_tokens": -1}, {"overlap_lines": -1}, {"window_lines": 0}]
)
def test_settings_out_of_range_are_refused(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        TreeSitterChunker(COUNTER, **kwargs)


BIG_CLASS = src('''
    class Store:
        """Keeps items in memory.

        Thread-unsafe; callers serialise access.
        """

        capacity: int = 100
        name = "default"

        def __init__(self, items: list[str]) -> None:
            self.items = list(items)
            self.hits = 0
            self.misses = 0

        def add(self, item: str) -> None:
            if len(self.items) >= self.capacity:
                raise OverflowError(f"store {self.name} is full at {self.capacity} items")
            self.items.append(item)

        def find(self, needle: str) -> str | None:
            for item in self.items:
                if needle in item:
                    self.hits += 1
                    return item
            self.misses += 1
            return None

        ratio = 0.5

        def stats(self) -> dict[str, int]:
            return {"hits": self.hits, "misses": self.misses, "size": len(self.items)}
    ''')


def test_a_class_that_fits_stays_one_chunk() -> None:
    chunks = TreeSitterChunker(COUNTER).chunk("store.py", BIG_CLASS, "python")
    assert spans(chunks) == [("class", "Store", 1, 31)]


def test_a_large_class_splits_into_header_fields_and_methods() -> None:
    chunker = TreeSitterChunker(COUNTER, max_tokens=80, min_tokens=0)
    chunks = chunker.chunk("store.py", BIG_CLASS, "python")
    assert spans(chunks) == [
        ("header", "Store", 1, 8),
        ("method", "Store.__init__", 10, 13),
        ("method", "Store.add", 15, 18),
        ("method", "Store.find", 20, 26),
        ("header", "Store", 28, 28),
        ("method", "Store.stats", 30, 31),
    ]
    assert_contract(BIG_CLASS, chunks, 80)


def test_nested_classes_qualify_their_methods() -> None:
    text = src("""
        public class Outer {
            private int a;

            static class Inner {
                private int b;

                void first() {
                    System.out.println("first call of the inner class method");
                }

                void second() {
                    System.out.println("second call of the inner class method");
                }
            }
        }
        """)
    chunks = TreeSitterChunker(COUNTER, max_tokens=30, min_tokens=0).chunk("O.java", text, "java")
    symbols = {c.symbol for c in chunks}
    assert {"Outer", "Outer.Inner", "Outer.Inner.first", "Outer.Inner.second"} <= symbols
    assert_contract(text, chunks, 30)


LONG_FUNCTION = (
    src('''
    @retry(times=3)
    def migrate(db, plan):
        """Apply every step of a migration plan."""
    ''')
    + "\n".join(
        f"    step_{i} = db.execute(plan.steps[{i}], timeout={i * 10}, label='step {i}')"
        for i in range(40)
    )
    + "\n    return db.commit()\n"
)


def test_an_oversized_function_splits_at_statements_with_overlap() -> None:
    chunker = TreeSitterChunker(COUNTER, max_tokens=250, min_tokens=0, overlap_lines=3)
    chunks = chunker.chunk("migrate.py", LONG_FUNCTION, "python")
    assert len(chunks) > 3
    assert chunks[0].kind == "function"
    assert chunks[0].content.startswith("@retry(times=3)\ndef migrate(db, plan):")
    assert {c.kind for c in chunks[1:]} == {"block"}
    assert {c.symbol for c in chunks} == {"migrate"}
    for before, after in itertools.pairwise(chunks):
        assert after.start_line == before.end_line - 2
    assert chunks[-1].end_line == len(LONG_FUNCTION.splitlines())
    assert_contract(LONG_FUNCTION, chunks, 250)


def test_a_doc_comment_over_budget_is_packed_by_lines_and_the_code_starts_a_piece() -> None:
    doc = "\n".join(
        f"/// Step {i}: the parser reads one more token of the input here." for i in range(40)
    )
    text = doc + "\nfn parse(input: &str) -> Tree {\n    let t = lex(input);\n    build(t)\n}\n"
    chunks = TreeSitterChunker(COUNTER, max_tokens=200, min_tokens=0).chunk("p.rs", text, "rust")
    # Before: a cut right after the comment's first row, which became a chunk of one line.
    assert all(c.end_line - c.start_line >= 5 for c in chunks[:-1])
    assert chunks[0].kind == "function"
    assert {c.symbol for c in chunks} == {"parse"}
    code = next(c for c in chunks if "fn parse" in c.content)
    assert code.end_line == len(split_lines(text))
    assert_contract(text, chunks, 200)


RUST_MACRO_BLOCKS = src("""
    use std::io;

    cfg_if::cfg_if! {
        if #[cfg(unix)] {
            fn native() -> u32 { 1 }
        } else {
            fn native() -> u32 { 2 }
        }
    }

    cfg_rt! {
        /// Spawns a task.
        pub fn spawn<F>(f: F) -> JoinHandle<F::Output> {
            inner(f)
        }
    }

    impl_num! {
        i8, NonZeroI8, deserialize_i8
        num_self!(i8:visit_i8);
    }

    mod net {
        cfg_net! {
            pub struct TcpStream { fd: i32 }
        }
    }
    """)


def test_items_inside_item_level_macro_blocks_are_definitions() -> None:
    chunker = TreeSitterChunker(COUNTER, min_tokens=0)
    chunks = chunker.chunk("lib.rs", RUST_MACRO_BLOCKS, "rust")
    found = [(k, s, a, b) for k, s, a, b in spans(chunks) if k != "module"]
    assert found == [
        ("function", "native", 5, 5),
        ("function", "native", 7, 7),
        ("function", "spawn", 12, 15),
        ("class", "TcpStream", 25, 27),
    ]
    # A macro taking its own syntax stays as written, in module code; every line is covered.
    assert any(c.kind == "module" and "impl_num!" in c.content for c in chunks)
    assert_contract(RUST_MACRO_BLOCKS, chunks, 512)


DART_LOADER = src("""
    /// Loads the settings.
    Future<Settings> load(String path) async {
      final file = File(path);
      if (!await file.exists()) {
        throw StateError('no settings at $path');
      }
      final text = await file.readAsString();
      final json = jsonDecode(text) as Map<String, Object?>;
      return Settings.fromJson(json);
    }
    int get answer => 42;
    """)


def test_a_dart_function_is_its_signature_and_the_body_after_it() -> None:
    # The tree holds two siblings, ``function_signature`` then ``function_body``.
    chunks = TreeSitterChunker(COUNTER, min_tokens=0).chunk("s.dart", DART_LOADER, "dart")
    assert spans(chunks) == [("function", "load", 1, 10), ("function", "answer", 11, 11)]
    # Over the budget, the body's statements are where it is cut; every part keeps the name.
    chunker = TreeSitterChunker(COUNTER, max_tokens=40, min_tokens=0, overlap_lines=0)
    chunks = chunker.chunk("s.dart", DART_LOADER, "dart")
    load = [c for c in chunks if c.symbol == "load"]
    assert [c.kind for c in load] == ["function"] + ["block"] * (len(load) - 1)
    assert len(load) > 1 and load[-1].end_line == 10
    lines = split_lines(DART_LOADER)
    assert all(lines[c.start_line - 1].startswith("  ") for c in load[1:])
    assert_contract(DART_LOADER, chunks, 40)


def test_a_haskell_signature_and_its_equations_are_one_function() -> None:
    text = src("""
        -- | Looks a key up.
        lookup :: Eq k => k -> [(k, v)] -> Maybe v
        lookup _ [] = Nothing
        lookup k ((k', v) : rest)
          | k == k' = Just v
          | otherwise = lookup k rest

        insert :: k -> v -> [(k, v)] -> [(k, v)]
        insert k v kvs = (k, v) : kvs
        (<+>) :: Int -> Int -> Int
        a <+> b = a + b
        (x, y) = (1, 2)
        """)
    chunks = TreeSitterChunker(COUNTER, min_tokens=0).chunk("m.hs", text, "haskell")
    assert spans(chunks) == [
        ("function", "lookup", 1, 6),
        ("function", "insert", 8, 9),
        ("function", "<+>", 10, 11),
        ("module", None, 12, 12),
    ]


def test_r_functions_are_the_ones_assigned_to_a_name() -> None:
    text = src("""
        cache <<- function(key) {
          store[[key]]
        }
        model <- lm(y ~ x, data = df)
        f ~ function(x) {
          x
        }
        Stack <- setRefClass("Stack",
          methods = list(
            push = function(x) {
              items[[length(items) + 1]] <<- x
            }
          )
        )
        """)
    chunker = TreeSitterChunker(COUNTER, max_tokens=30, min_tokens=0)
    found = [(k, s) for k, s, _, _ in spans(chunker.chunk("r.R", text, "r"))]
    # A formula's ``~`` is no assignment: that function has no name and is module code.
    assert found == [
        ("function", "cache"),
        ("module", None),
        ("header", "Stack"),
        ("method", "Stack.push"),
    ]


def test_an_erlang_header_s_records_and_types_are_chunks() -> None:
    text = src("""
        %% The server's state.
        -record(state, {socket, buffer = <<>> :: binary()}).

        -define(TIMEOUT, 5000).

        -type reason() :: normal | shutdown.
        """)
    language = languages.language_for_path("include/server.hrl")
    assert language == "erlang"
    chunks = TreeSitterChunker(COUNTER, min_tokens=0).chunk("server.hrl", text, language)
    assert spans(chunks) == [
        ("class", "state", 1, 2),
        ("module", None, 4, 4),
        ("class", "reason", 6, 6),
    ]


def test_an_erlang_spec_stays_with_its_clauses_across_a_blank_line() -> None:
    # OTP's own style: a -spec, a blank line, then the function's clauses.
    text = src("""
        %% append(L) appends the list of lists L

        -spec append(ListOfLists) -> List1 when
              ListOfLists :: [List],
              List1 :: [term()].

        append([E]) -> E;
        append([H|T]) -> H ++ append(T);
        append([]) -> [].
        """)
    chunks = TreeSitterChunker(COUNTER, min_tokens=0).chunk("lists.erl", text, "erlang")
    # The comment above it, apart by a blank line, is not the function's (as in any language).
    assert spans(chunks) == [("module", None, 1, 1), ("function", "append", 3, 9)]


def test_a_doc_comment_ending_in_the_next_line_s_indentation_is_not_that_line() -> None:
    # tree-sitter-zig's doc_comment node runs into the indentation of the line below it.
    text = src("""
        const Counter = struct {
            /// The count.
            count: u32,
            pub fn get(self: Counter) u32 {
                return self.count;
            }
        };
        """)
    chunker = TreeSitterChunker(COUNTER, max_tokens=20, min_tokens=0)
    chunks = chunker.chunk("c.zig", text, "zig")
    # The field stays in the header: the method starts at its own line, not at ``count: u32,``.
    assert [(c.kind, c.start_line) for c in chunks] == [("header", 1), ("method", 4)]
    assert_contract(text, chunks, 20)


def test_overlap_is_at_most_half_a_part() -> None:
    chunker = TreeSitterChunker(COUNTER, max_tokens=60, min_tokens=0, overlap_lines=3)
    chunks = chunker.chunk("migrate.py", LONG_FUNCTION, "python")
    for before, after in itertools.pairwise(chunks):
        shared = before.end_line - after.start_line + 1
        assert 0 <= shared <= (before.end_line - before.start_line) // 2
    assert_contract(LONG_FUNCTION, chunks, 60)


def test_no_overlap_when_overlap_lines_is_zero() -> None:
    chunker = TreeSitterChunker(COUNTER, max_tokens=120, min_tokens=0, overlap_lines=0)
    chunks = chunker.chunk("migrate.py", LONG_FUNCTION, "python")
    for before, after in itertools.pairwise(chunks):
        assert after.start_line == before.end_line + 1
    assert_contract(LONG_FUNCTION, chunks, 120)


def test_a_huge_single_statement_is_split_inside() -> None:
    entries = "\n".join(f'        "key_{i}": compute_value({i}, scale={i * 3}),' for i in range(60))
    text = f"def table():\n    return {{\n{entries}\n    }}\n"
    chunks = TreeSitterChunker(COUNTER, max_tokens=100).chunk("t.py", text, "python")
    assert len(chunks) > 3
    assert chunks[0].content.startswith("def table():")
    assert_contract(text, chunks, 100)


def test_a_single_line_over_budget_is_its_own_chunk() -> None:
    text = "x = [" + ", ".join(str(i) for i in range(400)) + "]\ny = 1\n"
    chunks = TreeSitterChunker(COUNTER, max_tokens=50, min_tokens=0).chunk("x.py", text, "python")
    assert (chunks[0].start_line, chunks[0].end_line) == (1, 1)
    assert_contract(text, chunks, 50)


TINY_FUNCTIONS = src("""
    def a():
        return 1

    def b():
        return 2

    def c():
        return 3

    def d():
        return 4

    def e():
        return 5

    def f():
        return 6
    """)


def test_tiny_neighbours_merge_only_up_to_min_tokens() -> None:
    chunker = TreeSitterChunker(COUNTER, min_tokens=16)
    chunks = chunker.chunk("tiny.py", TINY_FUNCTIONS, "python")
    assert 1 < len(chunks) < 6
    for chunk in chunks:
        assert chunk.kind == "function"
        # a merge stops as soon as it reaches min_tokens: dropping its last function brings
        # it back under min_tokens
        if "," in (chunk.symbol or ""):
            lines = chunk.content.splitlines()
            assert COUNTER.count("\n".join(lines[:-3])) < 16
    assert spans(chunks)[0] == ("function", "a, b, c", 1, 8)
    assert_contract(TINY_FUNCTIONS, chunks, 512)


def test_a_definition_at_min_tokens_never_merges() -> None:
    big = "def big(x):\n" + "\n".join(f"    x = x * {i} + {i * 7}" for i in range(12))
    text = f"def a():\n    return 1\n\n{big}\n\ndef b():\n    return 2\n"
    chunks = TreeSitterChunker(COUNTER, min_tokens=48).chunk("m.py", text, "python")
    assert [c.symbol for c in chunks] == ["a", "big", "b"]


def test_no_merging_with_min_tokens_zero() -> None:
    chunks = TreeSitterChunker(COUNTER, min_tokens=0).chunk("tiny.py", TINY_FUNCTIONS, "python")
    assert [c.symbol for c in chunks] == ["a", "b", "c", "d", "e", "f"]


def test_module_level_code_is_kept() -> None:
    text = src("""
        import os
        import sys

        LIMIT = int(os.environ.get("LIMIT", "10"))

        def main(argv):
            for arg in argv[:LIMIT]:
                print(arg.upper(), file=sys.stdout, flush=True)
            return len(argv) if argv else 0

        if __name__ == "__main__":
            raise SystemExit(main(sys.argv[1:]))
        """)
    chunks = TreeSitterChunker(COUNTER, min_tokens=0).chunk("cli.py", text, "python")
    assert spans(chunks) == [
        ("module", None, 1, 4),
        ("function", "main", 6, 9),
        ("module", None, 11, 12),
    ]


def test_a_big_module_gap_splits_at_statements() -> None:
    text = "\n".join(f"SETTING_{i} = load_setting('setting_{i}', default={i})" for i in range(50))
    chunks = TreeSitterChunker(COUNTER, max_tokens=100).chunk("cfg.py", text, "python")
    assert len(chunks) > 5
    assert {c.kind for c in chunks} == {"module"}
    assert_contract(text, chunks, 100)


def test_namespaces_and_preprocessor_blocks_are_looked_through() -> None:
    text = src("""
        #ifndef UTIL_H
        #define UTIL_H

        namespace util {

        int twice(int x) {
            return 2 * x;
        }

        }  // namespace util

        #endif
        """)
    chunks = TreeSitterChunker(COUNTER, min_tokens=0).chunk("util.h", text, "cpp")
    assert ("function", "twice", 6, 8) in spans(chunks)
    assert_contract(text, chunks, 512)


def test_a_macro_line_before_a_namespace_or_class_leaves_their_definitions_whole() -> None:
    # The grammar reads a line holding only a macro as the type of what follows: the namespace
    # became a "function" named "namespace", the class a return type. The parser gets such
    # lines blanked; the chunks keep them.
    text = src("""
        #include <string>

        NLOHMANN_JSON_NAMESPACE_BEGIN
        namespace detail
        {

        JSON_HEDLEY_WARN_UNUSED_RESULT
        JSON_HEDLEY_NON_NULL(1)
        inline int twice(int x)
        {
            return 2 * x;
        }

        }  // namespace detail

        NLOHMANN_BASIC_JSON_TPL_DECLARATION
        class basic_json
        {
          public:
            int size() const
            {
                return 0;
            }
        };
        NLOHMANN_JSON_NAMESPACE_END
        """)
    chunker = TreeSitterChunker(COUNTER, min_tokens=0)
    chunks = chunker.chunk("json.hpp", text, "cpp")
    assert [s for s in spans(chunks) if s[0] != "module"] == [
        ("function", "twice", 7, 12),
        ("class", "basic_json", 16, 24),
    ]
    assert_contract(text, chunks, 512)
    split = TreeSitterChunker(COUNTER, max_tokens=20, min_tokens=0).chunk("j.hpp", text, "cpp")
    assert ("method", "basic_json.size", 20, 24) in spans(split)
    assert all(c.symbol != "namespace" for c in chunks + split)


def test_macro_lines_that_head_a_body_or_continue_code_stay_for_the_parser() -> None:
    text = src("""
        enum state {
          READY,
          DONE
        };

        TEST(Parser, ReadsNumbers)
        {
            EXPECT_EQ(parse("1"), 1);
        }

        BOOL
        WINAPI
        DllMain(HINSTANCE h, DWORD reason, LPVOID reserved)
        {
            return TRUE;
        }
        """)
    chunks = TreeSitterChunker(COUNTER, min_tokens=0).chunk("t.cpp", text, "cpp")
    assert spans(chunks) == [
        ("class", "state", 1, 4),
        ("function", "TEST", 6, 9),
        ("function", "DllMain", 11, 16),
    ]


def test_a_macro_before_a_namespace_on_its_line_is_looked_through() -> None:
    # "API_BEGIN namespace x {" is still read as a function named "namespace" with no function
    # declarator: a C/C++ function definition without one is looked through.
    text = src("""
        API_BEGIN namespace util {

        int twice(int x) {
            return 2 * x;
        }

        }
        """)
    chunks = TreeSitterChunker(COUNTER, min_tokens=0).chunk("util.h", text, "cpp")
    # (the namespace's closing brace joins the chunk before it)
    assert spans(chunks) == [("module", None, 1, 1), ("function", "twice", 3, 7)]
    assert_contract(text, chunks, 512)


def test_cpp_operators_keep_their_whole_name_and_friends_are_reached() -> None:
    text = src("""
        class A {
          public:
            bool operator<(const A& o) const { return x < o.x; }
            int& operator[](int i) { return v[i]; }
            int operator()(int a) const { return a; }
            explicit operator bool() const { return true; }
            friend bool operator==(const A& l, const A& r) noexcept { return l.x == r.x; }
            friend class B;
        };
        A& A::operator+=(const A& o) { return *this; }
        template <typename T>
        bool iter<T>::operator!=(const iter& o) const { return true; }
        """)
    chunks = TreeSitterChunker(COUNTER, max_tokens=30, min_tokens=0).chunk("a.cpp", text, "cpp")
    symbols = [c.symbol for c in chunks if c.kind in {"method", "function"}]
    assert symbols == [
        "A.operator<",
        "A.operator[]",
        "A.operator()",
        "A.operator bool",
        "A.operator==",
        "A.operator+=",
        "iter.operator!=",
    ]
    assert_contract(text, chunks, 30)


def test_c_if_else_branches_that_balance_only_together_keep_the_function() -> None:
    # Each branch opens the loop's brace, closed once after #endif: as written, the function is
    # lost to an ERROR node. When the tree has errors it is parsed again with the first branch
    # of each #if kept (as ctags does); the chunk keeps every line.
    text = src("""
        #include <unistd.h>

        void uv__async_io(uv_loop_t* loop, uv__io_t* w, unsigned int events) {
          char buf[1024];
          ssize_t r;

        #if UV__KQUEUE_EVFILT_USER
          for (;!kqueue_evfilt_user_support;) {
        #elif defined(__linux__)
          for (;!linux_support;) {
        #else
          for (;;) {
        #endif
            r = read(w->fd, buf, sizeof(buf));
            if (r == sizeof(buf))
              continue;
            break;
          }
        }

        int uv__async_fork(uv_loop_t* loop) {
          return 0;
        }
        """)
    chunks = TreeSitterChunker(COUNTER, min_tokens=0).chunk("async.c", text, "c")
    assert spans(chunks) == [
        ("module", None, 1, 1),
        ("function", "uv__async_io", 3, 19),
        ("function", "uv__async_fork", 21, 23),
    ]
    assert_contract(text, chunks, 512)


def test_a_multi_line_function_like_macro_is_a_function_named_by_the_macro() -> None:
    # A macro whose body spans lines expands to statements or generates definitions; a
    # one-line macro is an expression, code between definitions.
    text = src(r"""
        #define MAX(a, b) ((a) > (b) ? (a) : (b))

        #define WATCHER_DEFINE(name)                          \
          int uv_##name##_init(uv_loop_t* loop) {             \
            return 0;                                         \
          }

        WATCHER_DEFINE(prepare)
        """)
    chunks = TreeSitterChunker(COUNTER, min_tokens=0).chunk("w.c", text, "c")
    assert spans(chunks) == [
        ("module", None, 1, 1),
        ("function", "WATCHER_DEFINE", 3, 6),
        ("module", None, 8, 8),
    ]


def test_js_tests_with_nested_callbacks_split_inside() -> None:
    cases = "\n".join(
        f"  it('handles case {i}', () => {{\n    expect(run({i})).toBe({i * 2});\n  }});"
        for i in range(30)
    )
    text = f"describe('run', () => {{\n{cases}\n}});\n"
    chunks = TreeSitterChunker(COUNTER, max_tokens=80).chunk("run.test.js", text, "javascript")
    assert len(chunks) > 5
    # parts end where a test case ends, not in the middle of one
    for chunk in chunks[:-1]:
        assert chunk.content.endswith("});")
    assert_contract(text, chunks, 80)


# Values made by calling a function with a function literal: the literal is the definition
# (zod's schema constructors, React's memo/forwardRef, debounce). Calls without one are data.
MADE_BY_CALLS = src("""
    import { memo, forwardRef } from "react";

    export const $ZodString = /*@__PURE__*/ core.$constructor("$ZodString", (inst, def) => {
      $ZodType.init(inst, def);
      inst._zod.parse = (payload) => payload;
    });

    const Input = memo(forwardRef(function Input(props, ref) {
      return render(props, ref);
    }));

    const save = debounce(async () => {
      await store.flush();
    }, 100);

    export const appRouter = t.router({
      greet: t.procedure.query(() => "hi"),
    });
    const Title = styled.h1`
      font-size: 2em;
    `;
    const client = createClient(options);
    """)


@pytest.mark.parametrize("language", ["javascript", "typescript", "tsx"])
def test_a_value_made_by_a_call_with_a_function_literal_is_a_function(language: str) -> None:
    chunks = TreeSitterChunker(COUNTER).chunk("schemas", MADE_BY_CALLS, language)
    assert spans(chunks) == [
        ("module", None, 1, 1),
        ("function", "$ZodString", 3, 6),
        ("function", "Input", 8, 10),
        ("function", "save", 12, 14),
        ("module", None, 16, 22),
    ]
    assert_contract(MADE_BY_CALLS, chunks, 512)


TYPE_ALIASES = src("""
    import type { AnyRouter } from "./router";

    /** What a procedure returns. */
    export type inferProcedureOutput<TProcedure> = TProcedure extends {
      _def: { $types: { output: infer TOutput } };
    }
      ? TOutput
      : never;

    type Maybe<T> = T | null | undefined;
    const DEFAULT = 1;
    """)


@pytest.mark.parametrize("language", ["typescript", "tsx"])
def test_type_aliases_over_several_lines_are_definitions(language: str) -> None:
    chunks = TreeSitterChunker(COUNTER).chunk("types.ts", TYPE_ALIASES, language)
    # A one-line alias names a type expression as a constant names a value: module code.
    assert spans(chunks) == [
        ("module", None, 1, 1),
        ("class", "inferProcedureOutput", 3, 8),
        ("module", None, 10, 11),
    ]
    assert_contract(TYPE_ALIASES, chunks, 512)


# Functions defined only when a condition holds: in an if/elif/else, or after `&&` in a list.
CONDITIONAL_FUNCTIONS = src("""
    if _is_function _git; then
      # Lists the commands.
      __git_list_all_commands() {
        echo alias
      }
      HUB=1
    elif command -v hub; then
      _hub() { hub "$@"; }
    else
      function _nohub {
        return 1
      }
    fi
    _command_exists mvim && function mvimt { command mvim --remote-tab-silent "$@"; }
    """)


def test_bash_functions_in_conditionals_and_lists_are_definitions() -> None:
    chunks = TreeSitterChunker(COUNTER).chunk("hub.bash", CONDITIONAL_FUNCTIONS, "bash")
    found = spans(chunks)
    for expected in [
        ("function", "__git_list_all_commands", 2, 5),
        ("function", "_hub", 8, 8),
        ("function", "_nohub", 10, 13),  # a closer (`fi`) joins the chunk before it
        ("function", "mvimt", 14, 14),
    ]:
        assert expected in found
    assert_contract(CONDITIONAL_FUNCTIONS, chunks, 512)


@pytest.mark.parametrize("text", ["", "\n", "   \n\t\n", "\r\n\r\n"])
@pytest.mark.parametrize("language", ["python", "go", None, "markdown"])
def test_an_empty_or_blank_file_has_no_chunks(text: str, language: str | None) -> None:
    assert TreeSitterChunker(COUNTER).chunk("x", text, language) == []


def test_line_numbers_match_editors() -> None:
    # CRLF and CR end lines; a form feed and U+2028 do not (editors and grep agree).
    text = "def a():\r\n    return 1\r\n\r\ndef b():\r    return 2\x0c\n\u2028x = 1\n"
    chunks = TreeSitterChunker(COUNTER, min_tokens=0).chunk("x.py", text, "python")
    assert_contract(text, chunks, 512)
    assert chunks[0].content == "def a():\n    return 1"
    assert chunks[-1].end_line == 6


@pytest.mark.parametrize(
    ("language", "text"),
    [
        ("php", "namespace Foo {\nfunction a() { return 1; }\n}\n<b>html</b>\n"),
        ("python", "def broken(:\n    return )\n\nclass\n  x = [1, 2\n"),
        ("kotlin", "class A { fun m() {} }\nfun x() = 1\n"),
        ("rust", "\x00\x01\x02 fn \xff\ufffd {{{{ \n\n}}} impl for \n\x00"),
        ("c", "{" * 3000 + "\n" + "}" * 3000 + "\nint main() { return 0; }\n"),
        ("javascript", "\U0001f600 const = => {\n\u202e\u2066 class extends {\n"),
    ],
)
def test_unparseable_text_is_still_covered(language: str, text: str) -> None:
    chunks = TreeSitterChunker(COUNTER, max_tokens=64).chunk("x", text, language)
    assert chunks
    assert_contract(text, chunks, 64)


def test_text_files_are_cut_into_overlapping_windows() -> None:
    text = "\n".join(f"key_{i}: value" for i in range(100))
    chunks = TreeSitterChunker(COUNTER, window_lines=20, overlap_lines=3).chunk(
        "a.yaml", text, "yaml"
    )
    assert [(c.start_line, c.end_line) for c in chunks[:3]] == [(1, 20), (18, 37), (35, 54)]
    assert {c.kind for c in chunks} == {"text"}
    assert_contract(text, chunks, 512)


def test_a_window_over_budget_shrinks() -> None:
    text = "\n".join(" ".join(f"word{i}_{j}" for j in range(20)) for i in range(60))
    chunks = TreeSitterChunker(COUNTER, max_tokens=150).chunk("notes.txt", text, None)
    assert all(c.end_line - c.start_line < 59 for c in chunks)
    assert_contract(text, chunks, 150)


def test_languages_without_a_grammar_use_windows() -> None:
    text = "SELECT 1;\n\nSELECT 2;\n"
    assert spans(TreeSitterChunker(COUNTER).chunk("q.sql", text, "sql")) == [("text", None, 1, 3)]


def test_markdown_splits_at_headings() -> None:
    body = "\n".join(f"Paragraph line {i} about the install procedure." for i in range(6))
    text = src("""
        # Project

        Intro.

        ## Install

        {body}

        ```sh
        # not a heading
        pip install project
        ```

        ## Usage

        {body}
        """).replace("{body}", body)
    chunks = TreeSitterChunker(COUNTER, min_tokens=0).chunk("README.md", text, "markdown")
    assert [(c.symbol, c.content.splitlines()[0]) for c in chunks] == [
        ("Project", "# Project"),
        ("Install", "## Install"),
        ("Usage", "## Usage"),
    ]
    assert_contract(text, chunks, 512)


def test_bash_text_that_crashes_the_grammar_scanner_is_masked_for_the_parser() -> None:
    # tree-sitter-bash's scanner calls isdigit() on the code point after "{", "." or a digit
    # (brace ranges); above U+00FF that reads past glibc's ctype table, and b"{\xf1\xb7\x86\xa8"
    # (U+771A8) crashed about one process in five. The parser gets such a character as one "_"
    # per byte (rows and byte columns unchanged); the chunks keep the original text.
    from tree_sitter import Parser
    from tree_sitter_language_pack import get_language

    seen: list[bytes] = []

    class Spy:
        def __init__(self) -> None:
            self._parser = Parser(get_language("bash"))

        def parse(self, source: bytes) -> object:
            seen.append(source)
            return self._parser.parse(source)

    chunker = TreeSitterChunker(TiktokenCounter(), min_tokens=0)
    chunker._local.parsers = {"bash": Spy()}
    text = "{\U000771a8}\necho 1.\u00e9 {a,\u00e9} 2\u4e2d\n"
    chunks = chunker.chunk("run.sh", text, "bash")
    # U+00E9 is inside the ctype table: left alone. The final line break is not parsed.
    assert seen == ["{____}\necho 1.\u00e9 {a,\u00e9} 2___".encode()]
    assert "\n".join(c.content for c in chunks) == text.removesuffix("\n")
