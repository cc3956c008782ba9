defmodule ExZarr.Codec.ItemsTest do
  use ExUnit.Case, async: true

  alias ExZarr.Codec.Items
  alias ExZarr.Shape

  doctest Items

  # Every index of `shape` in C order.
  defp indices(shape) do
    shape
    |> Tuple.to_list()
    |> Enum.reduce([[]], fn n, acc -> for idx <- acc, i <- 0..(n - 1)//1, do: idx ++ [i] end)
    |> Enum.map(&List.to_tuple/1)
  end

  defp items(shape, tag),
    do: indices(shape) |> Enum.map(&"#{tag}#{inspect(&1)}") |> List.to_tuple()

  defp add(a, b),
    do: a |> Tuple.to_list() |> Enum.zip(Tuple.to_list(b)) |> Enum.map(fn {x, y} -> x + y end)

  # What assemble/3 must give, element by element.
  defp model(shape, base, pieces) do
    for idx <- indices(shape) do
      hit =
        Enum.find_value(pieces, fn {src, src_shape, src_start, start, count} ->
          rel =
            idx
            |> Tuple.to_list()
            |> Enum.zip(Tuple.to_list(start))
            |> Enum.map(fn {i, s} -> i - s end)

          if Enum.all?(Enum.zip(rel, Tuple.to_list(count)), fn {r, c} -> r >= 0 and r < c end) do
            at = add(List.to_tuple(rel), src_start) |> List.to_tuple()

            case src do
              {:fill, fill} -> {:ok, fill}
              src -> {:ok, elem(src, Shape.ravel(at, src_shape))}
            end
          end
        end)

      case {hit, base} do
        {{:ok, item}, _} -> item
        {nil, {:fill, fill}} -> fill
        {nil, base} -> elem(base, Shape.ravel(idx, shape))
      end
    end
  end

  test "fill? is true only when every item is the fill value" do
    assert Items.fill?({"", ""}, "")
    assert Items.fill?([], "x")
    refute Items.fill?({"", "a"}, "")
    refute Items.fill?(["a"], "")
  end

  test "fortran_to_c reorders items of any shape, and is undone on the reversed shape" do
    for shape <- [{}, {1}, {5}, {2, 3}, {3, 1, 2}, {2, 2, 2, 2}] do
      c_order = items(shape, "c")
      # The Fortran-order tuple of `shape` is the C-order tuple of the reversed shape.
      reversed = shape |> Tuple.to_list() |> Enum.reverse() |> List.to_tuple()

      fortran =
        indices(reversed)
        |> Enum.map(fn idx ->
          c_idx = idx |> Tuple.to_list() |> Enum.reverse() |> List.to_tuple()
          elem(c_order, Shape.ravel(c_idx, shape))
        end)
        |> List.to_tuple()

      assert Items.fortran_to_c(fortran, shape) == Tuple.to_list(c_order)
      assert Items.fortran_to_c(c_order, reversed) == Tuple.to_list(fortran)
    end
  end

  test "assemble agrees with an element-by-element model, on boxes of chunk grids" do
    shape = {4, 6}
    src = items({2, 3}, "s")

    cases = [
      [],
      [{src, {2, 3}, {0, 0}, {0, 0}, {2, 3}}],
      [{src, {2, 3}, {1, 1}, {2, 3}, {1, 2}}, {src, {2, 3}, {0, 0}, {0, 0}, {1, 3}}],
      [{{:fill, "f"}, {2, 3}, {0, 0}, {2, 0}, {2, 3}}, {src, {2, 3}, {0, 1}, {2, 3}, {2, 2}}]
    ]

    for pieces <- cases, base <- [{:fill, "-"}, items(shape, "b")] do
      assert Items.assemble(shape, base, pieces) == model(shape, base, pieces),
             inspect({pieces, base})
    end
  end

  test "the native assembly agrees with the model, from tuples and from layouts" do
    :rand.seed(:exsss, {11, 11, 11})

    for _ <- 1..300 do
      dims = for _ <- 1..(:rand.uniform(3) - 1)//1, do: :rand.uniform(5) - 1
      # pieces cut from a grid of chunks of the output: disjoint, as a read's are
      chunk = for n <- dims, do: :rand.uniform(max(n, 1))

      pieces =
        for start <- grid_starts(dims, chunk), :rand.uniform(3) > 1, do: piece(start, chunk, dims)

      shape = List.to_tuple(dims)

      assert ExZarr.Native.vlen_assemble(shape, "-", pieces) ==
               {:ok, model(shape, {:fill, "-"}, Enum.map(pieces, &split/1))},
             inspect({shape, pieces})
    end

    bad = [{{:layout, <<2::little-32>>}, {2}, {0}, {0}, {2}}]
    assert ExZarr.Native.vlen_assemble({2}, "", bad) == {:error, :malformed_layout}

    # a source of another size than its shape, boxes outside the source or the output, axes
    # that differ, a count below zero, not pieces
    for pieces <-
          [
            [{{"a"}, {2}, {0}, {0}, {1}}],
            [{{"a"}, {1}, {1}, {0}, {1}}],
            [{{"a"}, {1}, {0}, {1}, {1}}],
            [{{"a"}, {1}, {0, 0}, {0}, {1}}],
            [{{"a"}, {1}, {0}, {0}, {-1}}],
            [{{:layout, <<1::little-32, 1::little-32, "a">>}, {1}, {0}, {0}, {1}}, :x],
            [:x],
            :x
          ] do
      assert_raise ArgumentError, fn -> ExZarr.Native.vlen_assemble({1}, "", pieces) end
    end
  end

  # The starts of a grid of `chunk` over `dims`, in C order.
  defp grid_starts(dims, chunk) do
    Enum.zip(dims, chunk)
    |> Enum.reduce([[]], fn {n, c}, acc ->
      for start <- acc, s <- 0..max(n - 1, 0)//c, s < n, do: start ++ [s]
    end)
  end

  # A piece at `start` of at most `chunk`, from a random box of a larger source: a tuple of
  # items, or its vlen layout.
  defp piece(start, chunk, dims) do
    count =
      for {s, c, n} <- Enum.zip([start, chunk, dims]), do: :rand.uniform(min(c, n - s) + 1) - 1

    src_dims = for c <- count, do: c + :rand.uniform(3) - 1
    src_start = for {c, n} <- Enum.zip(count, src_dims), do: :rand.uniform(n - c + 1) - 1
    src = items(List.to_tuple(src_dims), "p#{inspect(start)}")

    src =
      if :rand.uniform(2) == 1,
        do: src,
        else: {:layout, ExZarr.Test.Codecs.vlen_layout(Tuple.to_list(src))}

    {src, List.to_tuple(src_dims), List.to_tuple(src_start), List.to_tuple(start),
     List.to_tuple(count)}
  end

  defp split({{:layout, layout}, shape, a, b, c}),
    do: {elem(ExZarr.Native.vlen_split(layout, Shape.product(shape), false), 1), shape, a, b, c}

  defp split(piece), do: piece

  test "a shape with an empty axis has no items, however long the other axes are" do
    for shape <- [{4_294_967_296, 0, 8}, {0, 4_294_967_296}, {3, 0}] do
      assert Items.assemble(shape, {:fill, ""}, []) == []
    end
  end

  test "string arrays with an empty axis beside a huge one read and write nothing, at once" do
    {:ok, a} =
      ExZarr.create(
        storage: :memory,
        dtype: :string,
        shape: {4_294_967_296, 0, 8},
        chunks: {1, 1, 1}
      )

    assert ExZarr.Array.get_slice(a) == {:ok, []}
    assert ExZarr.Array.set_slice(a, []) == :ok
  end

  test "a zero-dimensional array has one item" do
    assert Items.assemble({}, {:fill, "-"}, []) == ["-"]
    assert Items.assemble({}, {:fill, "-"}, [{{"x"}, {}, {}, {}, {}}]) == ["x"]
  end
end
