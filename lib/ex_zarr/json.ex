defmodule ExZarr.JSON do
  @moduledoc false
  # The JSON edge of ExZarr's metadata documents: decoding with jiffy (maps with string keys,
  # `:null` for null) plus Python's bare `NaN` / `Infinity` / `-Infinity` literals, and encoding
  # as indented JSON with Zarr's keys in the order zarr-python writes them and a `-0.0` that
  # keeps its sign.

  @doc """
  Decodes a JSON document (jiffy, maps with string keys, `:null` for null). An object with
  the same key twice is `{:error, {:invalid_json, {:duplicate_key, key}}}`.

  Python's `json` module, and so zarr-python, writes non-finite floats in attributes as bare
  `NaN`, `Infinity` and `-Infinity`; these are read as `:nan`, `:infinity` and
  `:neg_infinity` (and `encode/1` writes them back the same way).

      iex> ExZarr.JSON.decode(~s({"a": [1, null]}))
      {:ok, %{"a" => [1, :null]}}
      iex> ExZarr.JSON.decode(~s({"_FillValue": NaN, "r": [-Infinity, "NaN"]}))
      {:ok, %{"_FillValue" => :nan, "r" => [:neg_infinity, "NaN"]}}
      iex> {:error, {:invalid_json, _}} = ExZarr.JSON.decode("{")
      iex> ExZarr.JSON.decode(~s({"a": {"b": 1, "b": 2}}))
      {:error, {:invalid_json, {:duplicate_key, "b"}}}
  """
  @spec decode(binary()) :: {:ok, term()} | {:error, {:invalid_json, term()}}
  def decode(binary) when is_binary(binary) do
    case jiffy_decode(binary) do
      {:ok, term} ->
        to_maps(term)

      # Only documents jiffy rejects pay for the rescan for non-finite literals.
      {:error, reason} ->
        with {:ok, marked} <- mark_non_finite(binary, <<>>),
             {:ok, term} <- jiffy_decode(marked),
             {:ok, term} <- to_maps(term) do
          {:ok, unmark_non_finite(term)}
        else
          {:error, {:invalid_json, {:duplicate_key, _}}} = error -> error
          _ -> {:error, {:invalid_json, reason}}
        end
    end
  end

  defp jiffy_decode(binary) do
    {:ok, :jiffy.decode(binary, [])}
  catch
    _kind, reason -> {:error, reason}
  end

  # jiffy's objects ({pairs}) as maps; an object naming a key twice is an error (readers
  # disagree on which value wins, so the document has no one meaning).
  defp to_maps(term) do
    {:ok, maps(term)}
  catch
    {:duplicate_key, key} -> {:error, {:invalid_json, {:duplicate_key, key}}}
  end

  defp maps({pairs}) do
    map = Map.new(pairs, fn {key, value} -> {key, maps(value)} end)

    if map_size(map) == length(pairs),
      do: map,
      else: throw({:duplicate_key, duplicate(pairs, %{})})
  end

  defp maps(list) when is_list(list), do: Enum.map(list, &maps/1)
  defp maps(other), do: other

  defp duplicate([{key, _} | rest], seen),
    do: if(is_map_key(seen, key), do: key, else: duplicate(rest, Map.put(seen, key, true)))

  @non_finite [{"-Infinity", :neg_infinity}, {"Infinity", :infinity}, {"NaN", :nan}]
  @marker "\\u0000exzarr:"

  # Rewrites bare NaN / Infinity / -Infinity outside strings as marked strings; returns
  # :unchanged when there are none (the document is invalid for another reason).
  defp mark_non_finite(<<>>, acc), do: if(acc =~ @marker, do: {:ok, acc}, else: :unchanged)

  defp mark_non_finite(<<?", rest::binary>>, acc), do: in_string(rest, <<acc::binary, ?">>)

  for {literal, atom} <- @non_finite do
    defp mark_non_finite(<<unquote(literal), rest::binary>>, acc),
      do: mark_non_finite(rest, <<acc::binary, ?", @marker, unquote(Atom.to_string(atom)), ?">>)
  end

  defp mark_non_finite(<<c, rest::binary>>, acc), do: mark_non_finite(rest, <<acc::binary, c>>)

  defp in_string(<<?\\, c, rest::binary>>, acc), do: in_string(rest, <<acc::binary, ?\\, c>>)
  defp in_string(<<?", rest::binary>>, acc), do: mark_non_finite(rest, <<acc::binary, ?">>)
  defp in_string(<<c, rest::binary>>, acc), do: in_string(rest, <<acc::binary, c>>)
  defp in_string(<<>>, _acc), do: :unchanged

  for {_literal, atom} <- @non_finite do
    defp unmark_non_finite(<<0, "exzarr:", unquote(Atom.to_string(atom))>>), do: unquote(atom)
  end

  defp unmark_non_finite(%{} = map), do: Map.new(map, fn {k, v} -> {k, unmark_non_finite(v)} end)
  defp unmark_non_finite(list) when is_list(list), do: Enum.map(list, &unmark_non_finite/1)
  defp unmark_non_finite(other), do: other

  @doc """
  A term given by a user (maps with atom or string keys, lists, strings, numbers, booleans,
  `nil`, atoms) in the form `decode/1` returns: string keys, `:null` for `nil`, atoms other
  than booleans and the non-finite `:nan`, `:infinity`, `:neg_infinity` as strings. `:error` for a term with no JSON form (a tuple, a struct, a string
  that is not UTF-8, a map with a key given both as an atom and as a string).

      iex> ExZarr.JSON.from_term(%{level: 3, shuffle: :bit, blocksize: nil, fill: :nan})
      {:ok, %{"blocksize" => :null, "fill" => :nan, "level" => 3, "shuffle" => "bit"}}
      iex> ExZarr.JSON.from_term(%{"a" => {1, 2}})
      :error
      iex> ExZarr.JSON.from_term(%{"level" => 1, level: 5})
      :error
  """
  @spec from_term(term()) :: {:ok, term()} | :error
  def from_term(term) do
    if json_term?(term), do: {:ok, jsonify(term)}, else: :error
  end

  defp json_term?(value) when is_binary(value), do: String.valid?(value)

  defp json_term?(value)
       when is_number(value) or is_boolean(value) or is_nil(value) or is_atom(value),
       do: true

  defp json_term?([]), do: true
  defp json_term?([head | tail]), do: json_term?(head) and is_list(tail) and json_term?(tail)
  defp json_term?(%_{}), do: false

  # A key given both as an atom and as a string has no one JSON form either.
  defp json_term?(%{} = map) do
    Enum.all?(map, fn {k, v} ->
      (is_atom(k) or (is_binary(k) and String.valid?(k))) and json_term?(v)
    end) and map |> Map.keys() |> Enum.uniq_by(&to_string/1) |> length() == map_size(map)
  end

  defp json_term?(_other), do: false

  defp jsonify(%{} = map), do: Map.new(map, fn {k, v} -> {to_string(k), jsonify(v)} end)
  defp jsonify(list) when is_list(list), do: Enum.map(list, &jsonify/1)
  defp jsonify(nil), do: :null

  defp jsonify(atom)
       when is_atom(atom) and atom not in [true, false, :null, :nan, :infinity, :neg_infinity],
       do: Atom.to_string(atom)

  defp jsonify(other), do: other

  @key_order ~w(zarr_format node_type shape chunks data_type dtype chunk_grid chunk_key_encoding
                fill_value order filters dimension_separator compressor codecs attributes
                storage_transformers dimension_names name id configuration kind)
             |> Enum.with_index()
             |> Map.new()

  @doc """
  Renders a JSON term (maps with string or atom keys, lists, strings, numbers, booleans,
  `nil` / `:null`) as indented JSON, with the keys of Zarr metadata in the order zarr-python
  writes them and other keys sorted. Unlike `:jiffy.encode/1` it keeps the sign of `-0.0`.
  Raises `ArgumentError` for a term that has no JSON form. Indentation stops growing
  32 levels down, so that a deeply nested value (an attribute of a careless caller) costs
  bytes in proportion to its size, not to its size times its depth.

      iex> ExZarr.JSON.encode(%{"b" => [1, -0.0], "a" => %{}})
      ~s({\\n  "a": {},\\n  "b": [\\n    1,\\n    -0.0\\n  ]\\n})
  """
  @spec encode(term()) :: binary()
  def encode(term), do: IO.iodata_to_binary(render(term, "\n"))

  # "\n" and two spaces a level, up to 32 levels
  @max_indent 1 + 2 * 32

  defp deeper(indent) when byte_size(indent) >= @max_indent, do: indent
  defp deeper(indent), do: indent <> "  "

  defp render(map, _indent) when is_map(map) and map_size(map) == 0, do: "{}"

  defp render(%{} = map, indent) do
    inner = deeper(indent)

    entries =
      map
      |> Enum.map(fn {k, v} -> {json_key(k), v} end)
      |> Enum.sort_by(fn {k, _} -> {Map.get(@key_order, k, map_size(@key_order)), k} end)
      |> Enum.map(fn {k, v} -> [inner, render_string(k), ": ", render(v, inner)] end)

    ["{", Enum.intersperse(entries, ","), indent, "}"]
  end

  defp render([], _indent), do: "[]"

  defp render(list, indent) when is_list(list) do
    inner = deeper(indent)
    ["[", Enum.intersperse(Enum.map(list, &[inner, render(&1, inner)]), ","), indent, "]"]
  end

  defp render(null, _indent) when null in [nil, :null], do: "null"
  defp render(bool, _indent) when is_boolean(bool), do: Atom.to_string(bool)
  defp render(int, _indent) when is_integer(int), do: Integer.to_string(int)
  defp render(float, _indent) when is_float(float), do: :erlang.float_to_binary(float, [:short])
  defp render(string, _indent) when is_binary(string), do: render_string(string)
  defp render(:nan, _indent), do: "NaN"
  defp render(:infinity, _indent), do: "Infinity"
  defp render(:neg_infinity, _indent), do: "-Infinity"
  defp render(atom, _indent) when is_atom(atom), do: render_string(Atom.to_string(atom))

  defp render(other, _indent),
    do: raise(ArgumentError, "no JSON form for #{inspect(other)}")

  defp json_key(key) when is_binary(key), do: key
  defp json_key(key) when is_atom(key), do: Atom.to_string(key)

  defp json_key(key),
    do: raise(ArgumentError, "JSON object key must be a string, got #{inspect(key)}")

  defp render_string(string) do
    if String.valid?(string),
      do: :jiffy.encode(string),
      else: raise(ArgumentError, "JSON strings must be UTF-8, got #{inspect(string)}")
  end
end
