defmodule ExZarr.Fuzz.Steps do
  @moduledoc """
  The API calls of a fuzz case (run in the child BEAM by `ExZarr.Fuzz.Exec`). Each step takes
  the state (`store`, the open `node`) and returns `{result, state}` where `result` is what
  the public function returned, `:skip` when the step does not apply to the node at hand, or
  `{:wrong, why}` when a successful result is wrong (a read of the wrong size).

  Arguments are given as specs resolved against the node at hand, so that a generated case
  reaches the code behind the argument checks:

    * a selection `{:box, seed, extra, extra_first}`: a small in-bounds `start:`/`stop:` box
      picked with `seed`, plus `extra` options (unknown or hostile ones) before or after;
      `:whole`: no options; anything else is passed as is
    * attributes `{:deep, n}`: a value nested `n` lists deep; anything else as is
    * data `:fit`: exactly what the selection needs (a binary, or a list of strings for the
      variable-length types); `{:off_by, n}`: `n` bytes more or less; anything else as is
    * chunk coordinates `{:chunk, seed}`: an existing chunk; a shape `{:delta, [d]}`: the
      current shape plus `d` (not below zero); anything else as is
    * a selection call `{:select, :get | :set, kind, spec, data}` (orthogonal, coordinates,
      mask or blocks): the spec resolved and the result checked by `ExZarr.Fuzz.Select`
      (`:fit` data: distinct numbers, or as above for other types)
  """

  alias ExZarr.{Array, ChunkGrid, DType, Group, Indexing}
  alias ExZarr.Fuzz.Select
  require DType

  @type state :: %{store: ExZarr.Storage.t(), node: term()}

  @doc "Runs one step."
  @spec run(term(), state()) :: {term(), state()}
  def run({:create, opts}, state) when is_list(opts),
    do: reopen(ExZarr.create(with_store(opts, state)), state)

  def run({:create, opts}, state), do: {ExZarr.create(opts), state}

  def run({:open, opts}, state) when is_list(opts),
    do: reopen(ExZarr.open(with_store(opts, state)), state)

  def run({:open, opts}, state), do: {ExZarr.open(opts), state}

  def run({:open_group, opts}, state) when is_list(opts),
    do: reopen(ExZarr.open_group(with_store(opts, state)), state)

  def run(step, %{node: %Array{} = a} = state), do: array_step(step, a, state)
  def run(step, %{node: %Group{} = g} = state), do: group_step(step, g, state)
  def run(_step, state), do: {:skip, state}

  defp with_store(opts, state), do: Keyword.put_new(opts, :storage, state.store)

  defp reopen({:ok, node} = result, state), do: {result, %{state | node: node}}
  defp reopen(result, state), do: {result, state}

  defp array_step({:get_slice, sel}, a, state) do
    opts = selection(a, sel)
    result = Array.get_slice(a, opts)
    {check_read(a, opts, result), state}
  end

  defp array_step({:set_slice, data, sel}, a, state) do
    opts = selection(a, sel)
    {Array.set_slice(a, data(a, data, box_count(a, opts)), opts), state}
  end

  defp array_step({:read_chunk, coords}, a, state),
    do: {Array.read_chunk(a, chunk_coords(a, coords)), state}

  defp array_step({:write_chunk, coords, data}, a, state) do
    coords = chunk_coords(a, coords)
    {Array.write_chunk(a, coords, data(a, data, chunk_count(a, coords))), state}
  end

  defp array_step({:resize, shape}, a, state), do: reopen(Array.resize(a, shape(a, shape)), state)

  defp array_step({:append, data, axis}, a, state) do
    count = div(ExZarr.Shape.product(a.metadata.shape), max(elem_or(a.metadata.shape, 0), 1))
    reopen(Array.append(a, data(a, data, min(count, Select.max_elements())), axis), state)
  end

  defp array_step({:chunk_stream, opts}, a, state) do
    {{:ok, a |> Array.chunk_stream(opts) |> Enum.take(3) |> length()}, state}
  rescue
    # A stream has no {:error, _}: it raises ExZarr.Error (documented), like a bang function.
    e in ExZarr.Error -> {{:error, e}, state}
  end

  defp array_step({:attributes, :set, attrs}, a, state),
    do: reopen(Array.set_attributes(a, attributes(attrs)), state)

  defp array_step({:attributes, :update, attrs}, a, state),
    do: reopen(Array.update_attributes(a, attributes(attrs)), state)

  defp array_step({:attributes, :delete, keys}, a, state),
    do: reopen(Array.delete_attributes(a, keys), state)

  defp array_step({:select, dir, kind, spec, data}, a, state),
    do: {Select.run(dir, kind, spec, &select_data(a, data, &1), a), state}

  defp array_step(_step, _a, state), do: {:skip, state}

  defp group_step({:group, :members}, g, state), do: {Group.members(g, recursive: true), state}
  defp group_step({:group, :tree}, g, state), do: {Group.tree(g), state}
  defp group_step({:group, :list}, g, state), do: {Group.list(g), state}
  defp group_step({:group, :consolidate}, g, state), do: reopen(Group.consolidate(g), state)

  # Opens a member (the `nth` of the listed ones, or a given path) and reads a box of it.
  defp group_step({:group, {:open, nth}}, g, state) when is_integer(nth) do
    case Group.list(g) do
      {:ok, [_ | _] = names} ->
        group_step({:group, {:open, Enum.at(names, rem(nth, length(names)))}}, g, state)

      _ ->
        {:skip, state}
    end
  end

  defp group_step({:group, {:open, path}}, g, state) do
    case Group.open(g, path) do
      {:ok, %Array{} = a} -> array_step({:get_slice, {:box, 1, [], false}}, a, state)
      other -> {other, state}
    end
  end

  defp group_step({:attributes, :set, attrs}, g, state),
    do: reopen(Group.set_attributes(g, attributes(attrs)), state)

  defp group_step({:attributes, :update, attrs}, g, state),
    do: reopen(Group.update_attributes(g, attributes(attrs)), state)

  defp group_step(_step, _g, state), do: {:skip, state}

  # -- argument specs -------------------------------------------------------------------

  defp selection(a, {:box, seed, extra, first?}) do
    box = box(a.metadata, seed)
    if first?, do: extra ++ box, else: box ++ extra
  end

  defp selection(_a, :whole), do: []
  defp selection(_a, other), do: other

  # A random in-bounds box within the spans of `ExZarr.Fuzz.Select.spans/1` (about 2^16
  # elements over about 1024 chunks at most).
  defp box(meta, seed) do
    :rand.seed(:exsss, {seed, 3, 5})

    {start, stop} =
      meta.shape
      |> Tuple.to_list()
      |> Enum.zip(Select.spans(meta))
      |> Enum.map(fn {n, per_dim} ->
        lo = if n > 0, do: :rand.uniform(n + 1) - 1, else: 0
        {lo, min(n, lo + :rand.uniform(per_dim + 1) - 1)}
      end)
      |> Enum.unzip()

    [start: List.to_tuple(start), stop: List.to_tuple(stop)]
  end

  # The element count of a selection when it is a valid box, else a small count.
  defp box_count(a, opts) do
    with true <- Keyword.keyword?(opts),
         {:ok, sel} <- Indexing.selection(a.metadata.shape, Keyword.take(opts, [:start, :stop])) do
      ExZarr.Shape.product(sel.shape)
    else
      _ -> 4
    end
  rescue
    _ -> 4
  end

  defp data(a, :fit, count), do: fit(a.metadata.dtype, min(count, Select.max_elements()))

  defp data(a, {:off_by, n}, count) do
    fit = fit(a.metadata.dtype, min(count, Select.max_elements()))

    cond do
      is_list(fit) and n >= 0 -> fit ++ List.duplicate("x", n)
      is_list(fit) -> Enum.drop(fit, -n)
      n >= 0 -> fit <> :binary.copy(<<7>>, n)
      true -> binary_part(fit, 0, max(byte_size(fit) + n, 0))
    end
  end

  defp data(_a, other, _count), do: other

  # Data of a selection write: distinct numbers for `:fit` (so that a write can be read back
  # and checked, see `ExZarr.Fuzz.Select`), else as `data/3`.
  defp select_data(a, :fit, count) do
    dtype = a.metadata.dtype

    if Select.exact_fixed?(dtype),
      do: Select.distinct(dtype, min(count, Select.max_elements())),
      else: data(a, :fit, count)
  end

  defp select_data(a, data, count), do: data(a, data, count)

  defp fit(dtype, count) when DType.is_var_len(dtype),
    do: for(i <- 1..count//1, do: Integer.to_string(i))

  defp fit(dtype, count) do
    size = count * DType.itemsize(dtype)
    :binary.copy(<<1, 2, 3, 4, 5, 6, 7, 0>>, div(size, 8) + 1) |> binary_part(0, size)
  end

  defp chunk_coords(a, {:chunk, seed}) do
    :rand.seed(:exsss, {seed, 5, 7})

    Indexing.grid_shape(a.metadata.shape, a.metadata.chunks)
    |> Tuple.to_list()
    |> Enum.map(fn n -> if n > 0, do: :rand.uniform(n) - 1, else: 0 end)
    |> List.to_tuple()
  end

  defp chunk_coords(_a, other), do: other

  # The element count of a whole chunk: of the chunk shape, or on a rectilinear grid of the
  # chunk at `coords` (a small count when they are not a chunk's).
  defp chunk_count(a, coords) do
    %{shape: shape, chunks: chunks} = a.metadata

    cond do
      ChunkGrid.regular?(chunks) ->
        ExZarr.Shape.product(chunks)

      Indexing.valid_chunk?(shape, chunks, coords) ->
        ExZarr.Shape.product(Indexing.chunk_shape(a.grid, coords))

      true ->
        4
    end
  end

  defp shape(a, {:delta, deltas}) when is_list(deltas) do
    a.metadata.shape
    |> Tuple.to_list()
    |> Enum.zip(Stream.cycle(deltas))
    |> Enum.map(fn {n, d} -> max(n + d, 0) end)
    |> List.to_tuple()
  end

  defp shape(_a, other), do: other

  defp attributes({:deep, depth}) when is_integer(depth),
    do: %{"deep" => Enum.reduce(1..depth//1, 0, fn _, acc -> [acc] end)}

  defp attributes(other), do: other

  defp elem_or(tuple, i) when tuple_size(tuple) > i, do: elem(tuple, i)
  defp elem_or(_tuple, _i), do: 1

  # A read of a valid box of a fixed-size type must be exactly that many elements.
  defp check_read(a, opts, {:ok, bin} = result) when is_binary(bin) do
    with false <- DType.is_var_len(a.metadata.dtype),
         true <- Keyword.keyword?(opts) and Keyword.keys(opts) -- [:start, :stop] == [],
         {:ok, sel} <- Indexing.selection(a.metadata.shape, opts),
         expected = ExZarr.Shape.product(sel.shape) * DType.itemsize(a.metadata.dtype),
         false <- byte_size(bin) == expected do
      {:wrong, "get_slice returned #{byte_size(bin)} bytes, expected #{expected}"}
    else
      _ -> result
    end
  end

  defp check_read(_a, _opts, result), do: result
end
