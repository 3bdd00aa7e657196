"""TreeSitterChunker on Scala: where an indented definition ends, and typeclass instances.

tree-sitter-scala ends an indented body (``def f =`` followed by lines, Scala 3's ``object A:``)
where the next token begins, so its range runs over the blank lines and the doc comment of the
next definition. And Scala defines typeclass instances as values (``implicit val x: TC[F] = new
TC[F] { ... }``, ``given x: TC[F] with ...``) whose members are methods like a class's.
"""

from __future__ import annotations

import textwrap

from codebase_mcp_search.adapters.tokens import TiktokenCounter
from codebase_mcp_search.adapters.treesitter import TreeSitterChunker
from codebase_mcp_search.core.models import ChunkDraft, split_lines

COUNTER = TiktokenCounter()


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def spans(chunks: list[ChunkDraft]) -> list[tuple[str | None, str | None, int, int]]:
    return [(c.kind, c.symbol, c.start_line, c.end_line) for c in chunks]


def chunk(text: str, language: str = "scala", max_tokens: int = 512) -> list[ChunkDraft]:
    chunks = TreeSitterChunker(COUNTER, max_tokens=max_tokens, min_tokens=0).chunk(
        f"file.{language}", text, language
    )
    lines = split_lines(text)
    covered = {n for c in chunks for n in range(c.start_line, c.end_line + 1)}
    assert all(n in covered for n, line in enumerate(lines, 1) if line.strip())
    return chunks


ALIGN = src("""
    trait Align[F[_]] {

      /**
       * Align two structures.
       */
      def alignWith[A, B, C](fa: F[A], fb: F[B])(f: Ior[A, B] => C): F[C] =
        functor.map(align(fa, fb))(f)

      /**
       * Align two structures with the same element, combining results.
       */
      def alignCombine[A: Semigroup](fa1: F[A], fa2: F[A]): F[A] =
        alignWith(fa1, fa2)(_.merge)

      // Pads the shorter side.
      def padZip[A, B](fa: F[A], fb: F[B]): F[(Option[A], Option[B])] =
        alignWith(fa, fb)(_.pad)
        // still padZip's: indented into its body
    }
    """)


def test_a_doc_comment_belongs_to_the_definition_below_an_indented_body() -> None:
    chunks = chunk(ALIGN, max_tokens=60)
    assert spans(chunks) == [
        ("header", "Align", 1, 1),
        ("method", "Align.alignWith", 3, 7),
        ("method", "Align.alignCombine", 9, 13),
        ("method", "Align.padZip", 15, 19),
    ]


def test_scala_3_indented_definitions_leave_the_next_comment_to_the_next() -> None:
    text = src("""
        object Instances:
          def first(xs: List[Int]): Int =
            xs.headOption.getOrElse(0)

          /** The last element, or zero when the list is empty. */
          def last(xs: List[Int]): Int =
            xs.lastOption.getOrElse(0)
        """)
    assert spans(chunk(text, max_tokens=40)) == [
        ("header", "Instances", 1, 1),
        ("method", "Instances.first", 2, 3),
        ("method", "Instances.last", 5, 7),
    ]


def test_a_python_comment_indented_into_a_body_stays_with_it() -> None:
    text = src("""
        def first():
            return 1
            # an afterthought of first's

        # About second.
        def second():
            return 2
        """)
    assert spans(chunk(text, "python")) == [
        ("function", "first", 1, 3),
        ("function", "second", 5, 7),
    ]


INSTANCES = src("""
    trait ListInstances extends cats.kernel.instances.ListInstances {

      implicit val catsStdInstancesForList
        : Traverse[List] & Monad[List] =
        new Traverse[List] with Monad[List] {

          def pure[A](x: A): List[A] = x :: Nil

          def flatMap[A, B](fa: List[A])(f: A => List[B]): List[B] =
            fa.flatMap(f)
        }

      implicit val catsStdShowForList: Show[List[Int]] = Show.fromToString
    }
    """)


def test_an_implicit_val_of_an_anonymous_class_is_a_class_of_its_members() -> None:
    found = spans(chunk(INSTANCES, max_tokens=40))
    owner = "ListInstances.catsStdInstancesForList"
    assert ("header", owner, 3, 5) in found
    assert ("method", f"{owner}.pure", 7, 7) in found
    assert ("method", f"{owner}.flatMap", 9, 11) in found


def test_an_instance_that_fits_is_one_class_chunk() -> None:
    found = spans(chunk(INSTANCES, max_tokens=90))
    assert ("class", "ListInstances.catsStdInstancesForList", 3, 11) in found


def test_scala_3_givens_are_classes_of_their_members() -> None:
    text = src("""
        object Instances:
          given listFunctor: Functor[List] with
            def map[A, B](fa: List[A])(f: A => B): List[B] =
              fa.map(f)

            def void[A](fa: List[A]): List[Unit] = fa.map(_ => ())

          given optionFunctor: Functor[Option] =
            new Functor[Option]:
              def map[A, B](fa: Option[A])(f: A => B): Option[B] =
                fa.map(f)

              def void[A](fa: Option[A]): Option[Unit] = fa.map(_ => ())

          given Ordering[Int] = Ordering.Int
        """)
    found = spans(chunk(text, max_tokens=30))
    assert ("method", "Instances.listFunctor.map", 3, 4) in found
    assert ("method", "Instances.listFunctor.void", 6, 6) in found
    assert ("method", "Instances.optionFunctor.map", 10, 11) in found
    assert ("method", "Instances.optionFunctor.void", 13, 13) in found


def test_a_package_object_is_a_class() -> None:
    text = src("""
        package cats

        package object data extends ScalaVersionSpecificPackage {
          type ValidatedNel[+E, +A] = Validated[NonEmptyList[E], A]

          def NonEmptyStream[A](head: A, tail: A*): NonEmptyStream[A] =
            OneAnd(head, tail.toStream)
        }
        """)
    assert spans(chunk(text)) == [("module", None, 1, 1), ("class", "data", 3, 8)]
    assert ("method", "data.NonEmptyStream", 6, 8) in spans(chunk(text, max_tokens=40))
