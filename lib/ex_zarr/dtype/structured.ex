defmodule ExZarr.DType.Structured do
  @moduledoc """
  Structured (record) data types: `{:structured, fields}`, numpy's `[("a", "<i4"), ...]`.

  A field is `{name, dtype, endian, shape}`: the field's type, its byte order (`nil` when its
  components are single bytes) and its subarray shape (`{}` for a scalar field). Records are
  packed without padding, fields in order, as numpy stores them.

  Array data of a structured type is the records exactly as stored, each field in its own
  byte order. Zarr v3 (zarr-python 3.1) has no byte order for fields: v3 fields are
  little-endian, so big-endian fields only come from v2 arrays. A subarray field is written to
  v3 as `[name, dtype, shape]`, which zarr-python 3.1 cannot read (it cannot create such
  arrays either). `field/3` extracts one field of every record in one native strided copy and
  returns it as packed little-endian elements of the field's type; `from_fields/2` builds
  records from such columns.

      iex> dtype = {:structured, [{"a", :int16, :little, {}}, {"b", :uint8, nil, {}}]}
      iex> records = <<1, 0, 7, 2, 0, 8>>
      iex> ExZarr.DType.Structured.field(records, dtype, "b")
      {:ok, <<7, 8>>}
      iex> ExZarr.DType.Structured.from_fields(dtype, %{"a" => <<1, 0, 2, 0>>, "b" => <<7, 8>>})
      {:ok, <<1, 0, 7, 2, 0, 8>>}

  With an array (v2 `[["a", "<i2"], ["b", "|u1"]]`, v3 `structured`):

      iex> dtype = {:structured, [{"a", :int16, :little, {}}, {"b", :uint8, nil, {}}]}
      iex> {:ok, a} = ExZarr.create(shape: {2}, dtype: dtype, storage: :memory, zarr_format: 2)
      iex> :ok = ExZarr.Array.set_slice(a, <<1, 0, 7, 2, 0, 8>>)
      iex> {:ok, records} = ExZarr.Array.get_slice(a)
      iex> ExZarr.DType.Structured.field(records, dtype, "a")
      {:ok, <<1, 0, 2, 0>>}
  """

  alias ExZarr.{DType, Native, Shape}
  require DType

  @typedoc "A field's place in a record."
  @type layout :: %{
          name: String.t(),
          dtype: DType.t(),
          endian: DType.endian(),
          shape: tuple(),
          offset: non_neg_integer(),
          size: pos_integer()
        }

  @doc """
  The size of one record, or `:error` when the fields are not a valid field list (names must
  be unique strings, types fixed-size).

      iex> ExZarr.DType.Structured.record_size([{"a", :int32, :little, {}}, {"b", :float64, :little, {2}}])
      {:ok, 20}
  """
  @spec record_size(term()) :: {:ok, pos_integer()} | :error
  def record_size([_ | _] = fields) do
    with false <- List.improper?(fields),
         sizes = Enum.map(fields, &field_size/1),
         false <- :error in sizes,
         names = Enum.map(fields, &elem(&1, 0)),
         true <- Enum.uniq(names) == names and Enum.sum(sizes) > 0 do
      {:ok, Enum.sum(sizes)}
    else
      _ -> :error
    end
  end

  def record_size(_fields), do: :error

  defp field_size({name, dtype, endian, shape})
       when is_binary(name) and endian in [:little, :big, nil] and is_tuple(shape) do
    dims = Tuple.to_list(shape)

    # A field's own size is not bounded here: the record's size is (`ExZarr.DType.check/1`).
    with true <- length(dims) <= ExZarr.Limits.max_dims(),
         true <- Enum.all?(dims, &(is_integer(&1) and &1 >= 0)),
         false <- DType.is_var_len(dtype),
         {:ok, size} <- DType.unbounded_itemsize(dtype) do
      size * Shape.product(shape)
    else
      _ -> :error
    end
  end

  defp field_size(_field), do: :error

  @doc """
  Where every field lies in a record, in order.

      iex> dtype = {:structured, [{"a", :int32, :little, {}}, {"b", :uint8, nil, {3}}]}
      iex> ExZarr.DType.Structured.layout(dtype) |> Enum.map(&{&1.name, &1.offset, &1.size})
      [{"a", 0, 4}, {"b", 4, 3}]
  """
  @spec layout(DType.t()) :: [layout()]
  def layout({:structured, fields}) do
    {layouts, _end} =
      Enum.map_reduce(fields, 0, fn {name, dtype, endian, shape}, offset ->
        size = DType.itemsize(dtype) * Shape.product(shape)
        field = %{name: name, dtype: dtype, endian: endian, shape: shape, offset: offset}
        {Map.put(field, :size, size), offset + size}
      end)

    layouts
  end

  @doc """
  One field of every record of `data` (packed records of `dtype`), as packed little-endian
  elements of the field's type (`shape` elements per record for a subarray field), in one
  strided native copy (plus a byte swap for a big-endian field).
  """
  @spec field(binary(), DType.t(), String.t()) :: {:ok, binary()} | {:error, term()}
  def field(data, {:structured, _} = dtype, name) when is_binary(data) do
    record = DType.itemsize(dtype)

    with {:ok, f} <- find(dtype, name),
         :ok <- whole_records(data, record) do
      n = div(byte_size(data), record)

      with {:ok, column} <- column(data, n, record, f), do: to_little(column, f)
    end
  end

  @doc """
  Builds packed records from one column per field (a map or keyword-like list from field
  name to packed little-endian elements of the field's type, as `field/3` returns them).
  Missing fields are zero bytes; all columns must hold the same number of records.
  """
  @spec from_fields(DType.t(), map() | [{String.t(), binary()}]) ::
          {:ok, binary()} | {:error, term()}
  def from_fields({:structured, _} = dtype, columns) do
    layouts = Map.new(layout(dtype), &{&1.name, &1})
    record = DType.itemsize(dtype)

    with {:ok, pieces} <- column_pieces(Map.new(columns), layouts) do
      case Enum.uniq(Enum.map(pieces, fn {_f, _col, n} -> n end)) do
        [] ->
          {:ok, <<>>}

        [0] ->
          {:ok, <<>>}

        [n] ->
          regions =
            Enum.map(pieces, fn {f, col, _n} ->
              {col, {n, f.size}, {0, 0}, {0, f.offset}, {n, f.size}}
            end)

          Native.copy_regions({n, record}, 1, {:fill, <<0>>}, regions)

        counts ->
          {:error, {:field_lengths_differ, counts}}
      end
    end
  end

  defp column_pieces(columns, layouts) do
    ExZarr.Result.map_ok(columns, fn {name, col} ->
      with {:ok, f} <- Map.fetch(layouts, name) |> or_error({:unknown_field, name}),
           :ok <- whole_records(col, f.size),
           {:ok, stored} <- from_little(col, f) do
        {:ok, {f, stored, div(byte_size(col), f.size)}}
      end
    end)
  end

  defp find(dtype, name) do
    dtype |> layout() |> Enum.find(&(&1.name == name)) |> or_error({:unknown_field, name})
  end

  defp or_error(nil, error), do: {:error, error}
  defp or_error(:error, error), do: {:error, error}
  defp or_error({:ok, value}, _error), do: {:ok, value}
  defp or_error(value, _error), do: {:ok, value}

  defp whole_records(data, size) when is_binary(data) and rem(byte_size(data), size) == 0,
    do: :ok

  defp whole_records(data, size) when is_binary(data),
    do: {:error, {:wrong_data_size, record_size: size, got: byte_size(data)}}

  defp whole_records(data, _size), do: {:error, {:not_a_binary, data}}

  defp column(_data, 0, _record, _f), do: {:ok, <<>>}

  defp column(data, n, record, f),
    do:
      Native.copy_regions({n, f.size}, 1, {:fill, <<0>>}, [
        {data, {n, record}, {0, f.offset}, {0, 0}, {n, f.size}}
      ])

  defp to_little(column, %{endian: :big, dtype: dtype}) when column != <<>>,
    do: swap(column, dtype)

  defp to_little(column, _f), do: {:ok, column}

  # The swap is its own inverse.
  defp from_little(column, f), do: to_little(column, f)

  defp swap(column, dtype) do
    case DType.component_size(dtype) do
      1 -> {:ok, column}
      n -> Native.byteswap(column, n)
    end
  end

  @doc false
  # v2 JSON: [[name, dtype], [name, dtype, shape], ...] -> {:structured, fields}.
  @spec from_v2(list()) :: {:ok, DType.t()} | :error
  def from_v2(fields), do: parse_fields(fields, &from_v2_field/1)

  defp from_v2_field(json) do
    case DType.from_v2(json) do
      {:ok, dtype, endian} -> {:ok, dtype, endian}
      {:error, _} -> :error
    end
  end

  @doc false
  # v3 JSON `fields` -> {:structured, fields}; v3 fields are little-endian.
  @spec from_v3(term()) :: {:ok, DType.t()} | :error
  def from_v3(fields) do
    parse_fields(fields, fn json ->
      case DType.from_v3(json) do
        {:ok, dtype} -> {:ok, dtype, if(DType.component_size(dtype) > 1, do: :little)}
        {:error, _} -> :error
      end
    end)
  end

  defp parse_fields([_ | _] = fields, parse_dtype) do
    fields
    |> ExZarr.Result.map_ok(fn
      [name, json] when is_binary(name) ->
        parse_field(name, json, [], parse_dtype)

      [name, json, shape] when is_binary(name) and is_list(shape) ->
        parse_field(name, json, shape, parse_dtype)

      _ ->
        {:error, :bad_field}
    end)
    |> case do
      {:ok, fields} -> {:ok, {:structured, fields}}
      {:error, _} -> :error
    end
  end

  defp parse_fields(_fields, _parse_dtype), do: :error

  defp parse_field(name, json, shape, parse_dtype) do
    case parse_dtype.(json) do
      {:ok, dtype, endian} -> {:ok, {name, dtype, endian, List.to_tuple(shape)}}
      :error -> {:error, :bad_field}
    end
  end

  @doc false
  @spec to_v2([DType.field()]) :: list()
  def to_v2(fields) do
    Enum.map(fields, fn {name, dtype, endian, shape} ->
      [name, DType.to_v2(dtype, endian) | shape_json(shape)]
    end)
  end

  @doc false
  # zarr-python 3.1 writes [name, dtype] pairs; a subarray field (which it cannot write)
  # gets its shape as a third element, as in v2.
  @spec to_v3([DType.field()]) :: map()
  def to_v3(fields) do
    %{
      "fields" =>
        Enum.map(fields, fn {name, dtype, _endian, shape} ->
          [name, DType.to_v3(dtype) | shape_json(shape)]
        end)
    }
  end

  @doc false
  # The names of the big-endian fields, nested ones as "outer.inner" (v3 cannot express them).
  @spec big_endian_fields([DType.field()]) :: [String.t()]
  def big_endian_fields(fields) do
    Enum.flat_map(fields, fn
      {name, {:structured, inner}, _endian, _shape} ->
        Enum.map(big_endian_fields(inner), &"#{name}.#{&1}")

      {name, _dtype, :big, _shape} ->
        [name]

      _field ->
        []
    end)
  end

  defp shape_json({}), do: []
  defp shape_json(shape), do: [Tuple.to_list(shape)]
end
