defmodule ExZarr.Storage.Azure.XML do
  @moduledoc false
  # Picks elements out of the Blob service's XML responses (listings, errors) with OTP's SAX
  # parser `:xmerl_sax_parser`, which keeps element names as strings: a hostile server cannot
  # fill the atom table. Documents with a DTD are refused, so entities cannot expand.

  @type path :: [String.t()]

  @doc """
  The elements at the given paths (element names from the root), in document order, each
  with its attributes and its own text.

      iex> ExZarr.Storage.Azure.XML.select("<a><b>x &amp; y</b><c><b>z</b></c></a>", [["a", "b"]])
      {:ok, [{["a", "b"], %{}, "x & y"}]}
  """
  @spec select(binary(), [path()]) ::
          {:ok, [{path(), %{String.t() => String.t()}, String.t()}]} | {:error, term()}
  def select(body, paths) when is_binary(body) do
    if String.contains?(body, "<!DOCTYPE") or String.contains?(body, "<!ENTITY") do
      {:error, {:invalid_xml, :dtd_not_allowed}}
    else
      wanted = MapSet.new(Enum.map(paths, &Enum.reverse/1))

      case :xmerl_sax_parser.stream(body,
             event_fun: &event(&1, &2, &3, wanted),
             event_state: {[], []}
           ) do
        {:ok, {[], found}, _rest} -> {:ok, Enum.reverse(found)}
        {:ok, _state, _rest} -> {:error, {:invalid_xml, :unclosed_elements}}
        {tag, _location, reason, _end_tags, _state} -> {:error, {:invalid_xml, {tag, reason}}}
        other -> {:error, {:invalid_xml, other}}
      end
    end
  end

  # The state is {open elements, innermost first, as {reversed path, attributes, text
  # parts}; the selected elements found so far, last first}.
  defp event({:startElement, _uri, name, _qname, attributes}, _location, {open, found}, _wanted) do
    path = [to_string(name) | parent_path(open)]

    attrs =
      Map.new(attributes, fn {_uri, _prefix, key, value} -> {to_string(key), chars(value)} end)

    {[{path, attrs, []} | open], found}
  end

  defp event({:characters, text}, _location, {[{path, attrs, parts} | open], found}, _wanted),
    do: {[{path, attrs, [parts | chars(text)]} | open], found}

  defp event(
         {:endElement, _uri, _name, _qname},
         _location,
         {[{path, attrs, parts} | open], found},
         wanted
       ) do
    if MapSet.member?(wanted, path),
      do: {open, [{Enum.reverse(path), attrs, IO.iodata_to_binary(parts)} | found]},
      else: {open, found}
  end

  defp event(_event, _location, state, _wanted), do: state

  defp parent_path([{path, _, _} | _]), do: path
  defp parent_path([]), do: []

  defp chars(text), do: :unicode.characters_to_binary(text)
end
