defmodule ExZarr.Test.Interop.Checks do
  @moduledoc """
  Assertions shared by the interop tests: ExZarr reads an array written by another library, or
  writes one for another library to read.

      ExZarr.Test.Interop.Checks.assert_reads(case)
  """

  import ExUnit.Assertions

  alias ExZarr.Test.Interop

  @doc """
  Opens the case's array with ExZarr, checks its metadata, and reads every slice of the case,
  comparing it byte for byte with the expected bytes the fixture script wrote.
  """
  @spec assert_reads(map()) :: :ok
  def assert_reads(c) do
    assert {:ok, array} = ExZarr.open(Interop.open_opts(c))
    meta = array.metadata
    assert meta.zarr_format == c.zarr_format
    assert meta.shape == List.to_tuple(c.shape)
    assert meta.chunks == List.to_tuple(c.chunks)
    assert meta.dtype == String.to_atom(c.dtype)
    assert_fill(meta.fill_value, c)
    assert meta.attributes == Map.get(c, :attributes, %{})
    assert meta.dimension_names == Map.get(c, :dimension_names)

    c.slices
    |> Enum.with_index()
    |> Enum.each(fn {[start, stop] = sel, k} ->
      expected = File.read!(Interop.expected_file(c, k))
      assert {:ok, got} = ExZarr.Array.get_slice(array, Interop.selection(sel))
      shape = Enum.zip_with(start, stop, &(&2 - &1))

      assert got == expected,
             "get_slice #{inspect(sel)}: " <>
               Interop.explain_diff(expected, got, Interop.itemsize(c.dtype), shape)
    end)

    assert_chunk_stream(array, c)
  end

  # Every chunk of the grid, missing ones as fill, at full chunk shape (in C order of the
  # chunk coordinates unless `ordered: false`); read_chunk finds exactly the chunks the writer
  # stored, with the same content.
  defp assert_chunk_stream(array, c) do
    chunks =
      array
      |> ExZarr.Array.chunk_stream(parallel: 2, ordered: false)
      |> Enum.sort_by(&elem(&1, 0))

    in_order = array |> ExZarr.Array.chunk_stream(parallel: 1) |> Enum.map(&elem(&1, 0))
    assert in_order == Enum.map(chunks, &elem(&1, 0)), "chunk_stream is not in C order"

    got = chunks |> Enum.map(&elem(&1, 1)) |> IO.iodata_to_binary()
    expected = File.read!(Interop.expected_file(c, :chunks))

    stored =
      MapSet.new(:jiffy.decode(File.read!(Interop.expected_file(c, :stored))), &List.to_tuple/1)

    for {coords, bin} <- chunks do
      case ExZarr.Array.read_chunk(array, coords) do
        {:ok, read} ->
          assert MapSet.member?(stored, coords), "read_chunk #{inspect(coords)}: not stored"
          assert read == bin, "read_chunk #{inspect(coords)} differs from chunk_stream"

        other ->
          assert other == {:error, :not_found}

          refute MapSet.member?(stored, coords),
                 "read_chunk #{inspect(coords)}: #{inspect(other)}"
      end
    end

    assert got == expected,
           "chunk_stream: " <>
             Interop.explain_diff(expected, got, Interop.itemsize(c.dtype), [
               div(byte_size(expected), Interop.itemsize(c.dtype))
             ])
  end

  # Hex bit patterns have no canonical Elixir form: the data check covers them.
  defp assert_fill(_got, %{fill_value: "0x" <> _}), do: :ok

  defp assert_fill(got, c) do
    want = Interop.elixir_fill(c.fill_value)
    bits = float_bits(c.dtype)

    assert same_fill?(got, want, bits),
           "fill_value #{inspect(got)}, expected #{inspect(want)} " <>
             "(stored as #{inspect(c.fill_value)})"
  end

  # Floats compare as the dtype stores them (0.1 in a float32 is 0.10000000149011612).
  defp float_bits("float16"), do: 16
  defp float_bits("float32"), do: 32
  defp float_bits("complex64"), do: 32
  defp float_bits(_), do: 64

  defp same_fill?({a, b}, {c, d}, bits), do: same_fill?(a, c, bits) and same_fill?(b, d, bits)

  defp same_fill?(a, b, bits) when is_float(a) or is_float(b),
    do: is_number(a) and is_number(b) and <<a::float-size(bits)>> == <<b::float-size(bits)>>

  defp same_fill?(a, b, _bits) when is_number(a) and is_number(b), do: a == b
  defp same_fill?(a, b, _bits), do: a === b

  @doc """
  Writes the case's data with ExZarr (create, then `Interop.writes/1`). Returns `:ok` or a
  description of what failed, never raises (the setup of a whole batch calls it).
  """
  @spec exzarr_write(map()) :: :ok | {:error, term()}
  def exzarr_write(c) do
    with {:ok, array} <- ExZarr.create(Interop.create_opts(c)) do
      Enum.reduce_while(Interop.writes(c), :ok, fn {bin, sel}, :ok ->
        case ExZarr.Array.set_slice(array, bin, sel) do
          :ok -> {:cont, :ok}
          other -> {:halt, {:error, {:set_slice, sel, other}}}
        end
      end)
    end
  rescue
    e -> {:error, {:raised, Exception.format(:error, e, __STACKTRACE__)}}
  end

  @doc """
  Opens an array another library wrote and makes the case's update with ExZarr (one
  `set_slice`). Returns `:ok` or a description of what failed, never raises.
  """
  @spec exzarr_update(map()) :: :ok | {:error, term()}
  def exzarr_update(c) do
    data = File.read!(Interop.expected_file(c, :update))

    with {:ok, array} <- ExZarr.open(Interop.open_opts(c)),
         :ok <- ExZarr.Array.set_slice(array, data, Interop.selection(c.update)) do
      :ok
    end
  rescue
    e -> {:error, {:raised, Exception.format(:error, e, __STACKTRACE__)}}
  end

  @doc "Reopens an array ExZarr wrote and compares the whole of it with the expected bytes."
  @spec assert_round_trip(map()) :: :ok
  def assert_round_trip(c) do
    expected = File.read!(Interop.expected_file(c, :full))
    assert {:ok, array} = ExZarr.open(Interop.open_opts(c))
    assert {:ok, got} = ExZarr.Array.get_slice(array, Interop.full_selection(c))

    assert got == expected,
           "ExZarr reading back its own array: " <>
             Interop.explain_diff(expected, got, Interop.itemsize(c.dtype), c.shape)

    :ok
  end
end
